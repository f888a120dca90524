//! Prometheus metrics, served at `/metrics`.

use std::sync::LazyLock;

use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

fn register<C: prometheus::core::Collector + Clone + 'static>(c: C) -> C {
    // unwrap: each metric is registered once, with a unique name.
    REGISTRY.register(Box::new(c.clone())).unwrap();
    c
}

pub static SUBMISSIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and labels.
        IntCounterVec::new(
            Opts::new(
                "scorecast_submissions_total",
                "Score submissions by outcome (ok, duplicate or an error code)",
            ),
            &["outcome"],
        )
        .unwrap(),
    )
});

pub static REDIS_ERRORS: LazyLock<IntCounter> = LazyLock::new(|| {
    // unwrap: constant, valid metric name.
    register(IntCounter::new("scorecast_redis_errors_total", "Redis calls that failed").unwrap())
});

pub static WS_CONNECTIONS: LazyLock<IntGauge> = LazyLock::new(|| {
    // unwrap: constant, valid metric name.
    register(IntGauge::new("scorecast_ws_connections", "Open WebSocket sessions").unwrap())
});

pub static RATE_LIMITED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and labels.
        IntCounterVec::new(
            Opts::new(
                "scorecast_rate_limited_total",
                "Requests refused by a limiter",
            ),
            &["policy"],
        )
        .unwrap(),
    )
});

pub static ME_STANDINGS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register(
        // unwrap: constant, valid metric name and labels.
        IntCounterVec::new(
            Opts::new(
                "scorecast_me_standings_total",
                "`me` standings brought up to date by a view flush, by source (derived from the \
                 change events, or read from Redis)",
            ),
            &["source"],
        )
        .unwrap(),
    )
});

/// The text exposition of every metric.
pub fn render() -> String {
    LazyLock::force(&SUBMISSIONS);
    LazyLock::force(&REDIS_ERRORS);
    LazyLock::force(&WS_CONNECTIONS);
    LazyLock::force(&RATE_LIMITED);
    LazyLock::force(&ME_STANDINGS);
    let mut buf = Vec::new();
    // unwrap: encoding into a Vec cannot fail.
    TextEncoder::new()
        .encode(&REGISTRY.gather(), &mut buf)
        .unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}
