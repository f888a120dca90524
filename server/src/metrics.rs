//! Prometheus metrics, served at `/metrics`. Every name and label is in the README table
//! ("Metrics"); `docs/grafana-dashboard.json` queries exactly these names, and
//! `tests/e2e/operator.rs` checks that each one it queries is exposed.
//!
//! Counters and histograms are updated where things happen (the submission core, the group
//! commit, the hub, the session's close, the queues); the gauges that describe state (views by
//! kind, queue depths and lag) are set when `/metrics` is scraped ([`set_subscriptions`],
//! [`set_queue`]). The queue gauges cost Redis about 7 commands per queue, so they are cached:
//! `queue::QueueGauges` reads them at most once per `metrics.queue_refresh_ms`, in a background
//! task a scrape starts, and a scrape costs Redis nothing whatever the number of queues.

use std::future::Future;
use std::sync::LazyLock;
use std::time::Instant;

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn register<C: prometheus::core::Collector + Clone + 'static>(c: C) -> C {
    // unwrap: each metric is registered once, with a unique name.
    REGISTRY.register(Box::new(c.clone())).unwrap();
    c
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    // unwrap: constant, valid metric names and labels.
    register(IntCounterVec::new(Opts::new(name, help), labels).unwrap())
}

fn counter(name: &str, help: &str) -> IntCounter {
    // unwrap: constant, valid metric name.
    register(IntCounter::new(name, help).unwrap())
}

fn gauge_vec(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    // unwrap: constant, valid metric names and labels.
    register(IntGaugeVec::new(Opts::new(name, help), labels).unwrap())
}

/// Latency buckets, seconds: 100 µs to 2.5 s.
const LATENCY: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

pub static SUBMISSIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_submissions_total",
        "Score submissions by outcome (ok, duplicate or an error code)",
        &["outcome"],
    )
});

pub static SUBMIT_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name, labels and buckets.
        HistogramVec::new(
            HistogramOpts::new(
                "scorecast_submit_duration_seconds",
                "Time from a submission reaching the submission core to its result, by front door (ws, http, internal)",
            )
            .buckets(LATENCY.to_vec()),
            &["transport"],
        )
        .unwrap(),
    )
});

pub static BATCH_SIZE: LazyLock<Histogram> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and buckets.
        Histogram::with_opts(
            HistogramOpts::new(
                "scorecast_submit_batch_size",
                "Submissions applied by one lua/submit.lua call (group commit)",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]),
        )
        .unwrap(),
    )
});

pub static SCRIPT_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name, labels and buckets.
        HistogramVec::new(
            HistogramOpts::new(
                "scorecast_redis_script_duration_seconds",
                "Round trip of one Lua script call, by script (the file name in lua/)",
            )
            .buckets(LATENCY.to_vec()),
            &["script"],
        )
        .unwrap(),
    )
});

pub static REDIS_ERRORS: LazyLock<IntCounter> =
    LazyLock::new(|| counter("scorecast_redis_errors_total", "Redis calls that failed"));

pub static WS_CONNECTIONS: LazyLock<IntGauge> = LazyLock::new(|| {
    // unwrap: constant, valid metric name.
    register(IntGauge::new("scorecast_ws_connections", "Open WebSocket sessions").unwrap())
});

pub static SUBSCRIPTIONS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "scorecast_subscriptions",
        "Open views on this instance, by view (top, me, around)",
        &["view"],
    )
});

pub static PUSHES: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_pushes_total",
        "View updates offered to sessions' outbound queues",
    )
});

pub static DEFERRED: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_views_deferred_total",
        "`me` updates left for the next flush because the session had not written the last one yet",
    )
});

pub static WITH_ACK: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_views_with_ack_total",
        "`me` updates queued with the submitter's ack (before the batch's results were handed \
         out), not at the board's next flush",
    )
});

pub static VIEWS_STRETCHED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_views_stretched_total",
        "Flushes of a board's `me` and `around` views that stretched their coalescing window (or \
         kept it at its 1 s maximum), by cause: `sessions_behind` (most `me` watchers had not \
         written their last update), `flush_budget` (the flush's own work took more than a \
         quarter of the window), `push_budget` (the instance's flushes offered more `me` and \
         `around` messages than `ws.player_pushes_per_sec`) or `with_acks` (most `me` watchers \
         had their last update with their own ack, up to 100 ms)",
        &["cause"],
    )
});

pub static VIEWS_WINDOW: LazyLock<prometheus::GaugeVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and labels.
        prometheus::GaugeVec::new(
            Opts::new(
                "scorecast_views_window_seconds",
                "The longest current coalescing window of `me` and `around` views among this \
                 instance's boards (`ws.coalesce_ms` when none is stretched, 0 when none was \
                 flushed), under the label of why it is stretched (`sessions_behind`, \
                 `flush_budget`, `push_budget`, `with_acks`; `none`: not stretched); the other \
                 labels read 0",
            ),
            &["cause"],
        )
        .unwrap(),
    )
});

/// Sets `scorecast_views_window_seconds`: the longest window and the cause of its stretch.
pub fn set_views_window(window: std::time::Duration, cause: &str) {
    for c in [
        "none",
        "sessions_behind",
        "flush_budget",
        "push_budget",
        "with_acks",
    ] {
        let v = if c == cause {
            window.as_secs_f64()
        } else {
            0.0
        };
        VIEWS_WINDOW.with_label_values(&[c]).set(v);
    }
}

pub static VIEWS_HOLD: LazyLock<prometheus::Gauge> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name.
        prometheus::Gauge::new(
            "scorecast_views_hold_seconds",
            "The longest current hold of a `me` view after an update that went with its player's \
             ack among this instance's boards: `ws.coalesce_ms`, growing up to what the players' \
             window leaves of 1 s while most `me` watchers keep submitting (0 when none was \
             flushed)",
        )
        .unwrap(),
    )
});

pub static COALESCED: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_views_coalesced_total",
        "View updates that replaced an unsent update of the same view (the client gets the latest only)",
    )
});

pub static WS_CLOSES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_ws_closes_total",
        "WebSocket sessions the server closed, by close code",
        &["code"],
    )
});

pub static WS_DISCONNECTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_ws_disconnects_total",
        "WebSocket sessions that ended without the server closing them, by cause (client_close, \
         abrupt, stalled)",
        &["cause"],
    )
});

pub static SLOW_CLOSES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_slow_client_closes_total",
        "Sessions closed with 1008 for being too slow, by reason (queue_full, stalled)",
        &["reason"],
    )
});

pub static PUBSUB_RECONNECTS: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_pubsub_reconnects_total",
        "Times the instance's pub/sub connection came back after a loss (on a cluster, also each lost sharded connection to a master)",
    )
});

pub static RESYNCS: LazyLock<IntCounter> = LazyLock::new(|| {
    counter(
        "scorecast_board_resyncs_total",
        "Boards whose views were all re-sent as fresh snapshots (pub/sub loss, Redis data loss)",
    )
});

pub static QUEUE_JOBS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    gauge_vec(
        "scorecast_queue_jobs",
        "Jobs per queue and state (ready, delayed, processing, dead)",
        &["queue", "state"],
    )
});

pub static QUEUE_LAG: LazyLock<prometheus::GaugeVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and labels.
        prometheus::GaugeVec::new(
            Opts::new(
                "scorecast_queue_lag_seconds",
                "How far past its run time the most overdue delayed job of the queue is (0: none due)",
            ),
            &["queue"],
        )
        .unwrap(),
    )
});

pub static JOBS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_jobs_total",
        "Settled jobs by queue and outcome (acked, retried, dead, lease_lapsed)",
        &["queue", "outcome"],
    )
});

pub static RATE_LIMITED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_rate_limited_total",
        "Requests refused by a limiter",
        &["policy"],
    )
});

pub static ME_STANDINGS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_me_standings_total",
        "`me` standings brought up to date, by source (derived from the change events, at a \
         view flush or at one of this instance's own batches; or read from Redis)",
        &["source"],
    )
});

pub static HTTP_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_http_requests_total",
        "HTTP requests answered, by method, route template (`files` for the static files, \
         `unmatched` when refused before routing) and status class (1xx to 5xx)",
        &["method", "route", "status"],
    )
});

pub static HTTP_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name, labels and buckets.
        HistogramVec::new(
            HistogramOpts::new(
                "scorecast_http_request_duration_seconds",
                "Time from an HTTP request's head to its response's head, by method, route \
                 template and status class",
            )
            .buckets(LATENCY.to_vec()),
            &["method", "route", "status"],
        )
        .unwrap(),
    )
});

/// The commit this binary was built from (`server/build.rs`).
pub const GIT_COMMIT: &str = env!("SCORECAST_GIT_COMMIT");

pub static BUILD_INFO: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    let g = gauge_vec(
        "scorecast_build_info",
        "Always 1; the labels say which build this is (version, git commit or `unknown`)",
        &["version", "git_commit"],
    );
    g.with_label_values(&[env!("CARGO_PKG_VERSION"), GIT_COMMIT])
        .set(1);
    g
});

/// The process's CPU time, memory, open file descriptors, threads and start time
/// (`process_*`, Linux).
#[cfg(target_os = "linux")]
static PROCESS: LazyLock<()> = LazyLock::new(|| {
    // unwrap: registered once; its names are not ours.
    REGISTRY
        .register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))
        .unwrap();
});

/// Records one answered HTTP request: `route` is the matched route's template (never the raw
/// path, so the series stay few); `""` is the static file service mounted at the root (which
/// also answers 404 for any path nothing else matched), labelled `files`; `None` (a request
/// refused before routing) is `unmatched`.
pub fn http_done(method: &str, route: Option<&str>, status: u16, started: Instant) {
    let method = match method {
        "GET" | "POST" | "PUT" | "DELETE" | "OPTIONS" | "HEAD" | "PATCH" => method,
        _ => "other",
    };
    let class = match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    };
    let route = match route {
        None => "unmatched",
        Some("") => "files",
        Some(r) => r,
    };
    let labels = [method, route, class];
    HTTP_REQUESTS.with_label_values(&labels).inc();
    HTTP_SECONDS
        .with_label_values(&labels)
        .observe(started.elapsed().as_secs_f64());
}

pub static AROUND_WINDOWS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "scorecast_around_windows_total",
        "`around` windows sent by a view flush, by source (derived from the change events, or \
         read from Redis)",
        &["source"],
    )
});

/// Times a Lua script call into [`SCRIPT_SECONDS`].
pub async fn script<T>(name: &'static str, call: impl Future<Output = T>) -> T {
    let t = Instant::now();
    let r = call.await;
    SCRIPT_SECONDS
        .with_label_values(&[name])
        .observe(t.elapsed().as_secs_f64());
    r
}

/// Records a Lua script call that started at `started` into [`SCRIPT_SECONDS`] (for call
/// sites where wrapping the call in [`script`] would not read well).
pub fn script_done(name: &'static str, started: Instant) {
    SCRIPT_SECONDS
        .with_label_values(&[name])
        .observe(started.elapsed().as_secs_f64());
}

/// The views of this instance by kind (set at each scrape).
pub fn set_subscriptions(by_view: &[(&str, i64)]) {
    for (view, n) in by_view {
        SUBSCRIPTIONS.with_label_values(&[view]).set(*n);
    }
}

/// One queue's depths and lag (set at each scrape).
pub fn set_queue(queue: &str, states: [(&str, u64); 4], lag_ms: i64) {
    for (state, n) in states {
        QUEUE_JOBS.with_label_values(&[queue, state]).set(n as i64);
    }
    QUEUE_LAG
        .with_label_values(&[queue])
        .set(lag_ms.max(0) as f64 / 1000.0);
    for outcome in ["acked", "retried", "dead", "lease_lapsed"] {
        JOBS.with_label_values(&[queue, outcome]);
    }
}

/// The text exposition of every metric. Label sets that have seen no sample yet are shown with
/// zero, so a dashboard finds every series from the first scrape.
pub fn render() -> String {
    for outcome in ["ok", "duplicate", "forbidden", "rate_limited"] {
        SUBMISSIONS.with_label_values(&[outcome]);
    }
    for t in ["ws", "http", "internal"] {
        SUBMIT_SECONDS.with_label_values(&[t]);
    }
    LazyLock::force(&BATCH_SIZE);
    for s in ["submit", "read"] {
        SCRIPT_SECONDS.with_label_values(&[s]);
    }
    LazyLock::force(&REDIS_ERRORS);
    LazyLock::force(&WS_CONNECTIONS);
    for v in ["top", "me", "around"] {
        SUBSCRIPTIONS.with_label_values(&[v]);
    }
    LazyLock::force(&PUSHES);
    LazyLock::force(&COALESCED);
    LazyLock::force(&DEFERRED);
    LazyLock::force(&WITH_ACK);
    for cause in [
        "sessions_behind",
        "flush_budget",
        "push_budget",
        "with_acks",
    ] {
        VIEWS_STRETCHED.with_label_values(&[cause]);
    }
    for code in ["1000", "1001", "1002", "1007", "1008", "1009"] {
        WS_CLOSES.with_label_values(&[code]);
    }
    for cause in ["client_close", "abrupt", "stalled"] {
        WS_DISCONNECTS.with_label_values(&[cause]);
    }
    for reason in ["queue_full", "stalled"] {
        SLOW_CLOSES.with_label_values(&[reason]);
    }
    LazyLock::force(&PUBSUB_RECONNECTS);
    LazyLock::force(&RESYNCS);
    LazyLock::force(&QUEUE_JOBS);
    LazyLock::force(&QUEUE_LAG);
    LazyLock::force(&JOBS);
    // `read`: the public reads' limiter (config.rs); other policies appear when they refuse.
    RATE_LIMITED.with_label_values(&["read"]);
    for source in ["derived", "read"] {
        ME_STANDINGS.with_label_values(&[source]);
    }
    LazyLock::force(&HTTP_REQUESTS);
    LazyLock::force(&HTTP_SECONDS);
    LazyLock::force(&BUILD_INFO);
    #[cfg(target_os = "linux")]
    LazyLock::force(&PROCESS);
    let mut buf = Vec::new();
    // unwrap: encoding into a Vec cannot fail.
    TextEncoder::new()
        .encode(&REGISTRY.gather(), &mut buf)
        .unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}
