//! The operator's side: every metric the Grafana dashboard in `docs/`
//! queries is exposed by `/metrics` of a running server, and documented in README's table.

use std::collections::BTreeSet;

use scorecast_tests::ws::WsClient;
use scorecast_tests::{root, spawn_app};
use serde_json::{json, Value};

/// The metric names (`scorecast_...`) in a text.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("scorecast_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        out.insert(name);
    }
    out
}

/// Every `expr` of the dashboard's panels.
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

/// The metric base name of a series name (histograms expose `_bucket`, `_sum`, `_count`).
fn base(name: &str) -> &str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// Each metric the dashboard queries is in `/metrics` of a running server (right after start,
/// with a board, a queue and a view: the moment an operator first looks) and in README's table.
#[tokio::test]
async fn every_dashboard_metric_is_exposed_and_documented() {
    // Arrange: a calendar board (its rollover job makes the `scorecast` queue), a submission
    // over HTTP and one over the WebSocket, an open view.
    let app = spawn_app().await;
    app.board("ops", json!({"reset": "daily"})).await;
    app.score("ops", "ann", 5).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    ws.hello(&app.token("ben", None)).await;
    assert_eq!(ws.submit("o-1", "ops", 3).await["type"], "ack");
    assert_eq!(ws.subscribe("ops", "top", json!({})).await["type"], "top");
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();

    // Act
    let text = app.metrics().await;

    // Assert
    let exposed: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect();
    let mut queried = Vec::new();
    exprs(&dashboard, &mut queried);
    assert!(queried.len() >= 10, "{queried:?}");
    let used: BTreeSet<String> = queried.iter().flat_map(|e| metric_names(e)).collect();
    let documented = metric_names(&readme);
    for name in &used {
        assert!(
            exposed.contains(name),
            "{name} is queried but not in /metrics:\n{text}"
        );
        assert!(
            documented.contains(base(name)),
            "{} is queried but not in README's table",
            base(name)
        );
    }
    // Live values (the registry is per process, shared by the tests running beside this one,
    // so at least ours): the submissions above, by front door; the view; the queue.
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert!(value("scorecast_submit_duration_seconds_count{transport=\"http\"}") >= 1.0);
    assert!(value("scorecast_submit_duration_seconds_count{transport=\"ws\"}") >= 1.0);
    assert!(value("scorecast_submit_batch_size_count") >= 2.0);
    assert!(value("scorecast_redis_script_duration_seconds_count{script=\"submit\"}") >= 2.0);
    value("scorecast_subscriptions{view=\"top\"}");
    // The push budget: the current stretch and its cause, stretched flushes by cause.
    value("scorecast_views_window_seconds{cause=\"none\"}");
    value("scorecast_views_hold_seconds");
    value("scorecast_views_stretched_total{cause=\"flush_budget\"}");
    value("scorecast_views_stretched_total{cause=\"sessions_behind\"}");
    value("scorecast_views_stretched_total{cause=\"with_acks\"}");
    value("scorecast_queue_jobs{queue=\"scorecast\",state=\"delayed\"}");
    value("scorecast_queue_lag_seconds{queue=\"scorecast\"}");
}

/// Every metric selector in a query: (name, the selector's labels or "").
fn selectors(expr: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = ["scorecast_", "process_"]
        .iter()
        .filter_map(|p| rest.find(p))
        .min()
    {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        let labels = match rest.strip_prefix('{') {
            Some(r) => r[..r.find('}').unwrap()].to_owned(),
            None => String::new(),
        };
        out.push((name, labels));
    }
    out
}

/// Whether a query's values are durations in seconds: a quantile of a `_seconds` histogram, or
/// a `_seconds` gauge (not a rate of one, nor a counter of seconds).
fn in_seconds(expr: &str) -> bool {
    (expr.contains("histogram_quantile") && expr.contains("_seconds_bucket"))
        || selectors(expr)
            .iter()
            .any(|(n, _)| n.ends_with("_seconds") && !expr.contains("rate("))
}

/// The dashboard can be narrowed to instances: it has an `instance` variable and every metric
/// selector of every panel's queries filters on `instance=~"$instance"`. Units fit the values:
/// a panel whose queries are durations uses a time unit; a panel with any count, rate or size
/// does not (no counts on a seconds axis).
#[test]
fn every_panel_filters_by_instance_and_counts_are_not_on_a_seconds_axis() {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        vars.iter()
            .any(|v| v["name"] == "instance" && v["type"] == "query"),
        "an instance variable: {vars:?}"
    );
    const TIME_UNITS: &[&str] = &[
        "ns",
        "µs",
        "us",
        "ms",
        "s",
        "m",
        "h",
        "d",
        "dtdurationms",
        "dtdurations",
        "clockms",
        "clocks",
    ];
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 10);
    for p in panels {
        let title = p["title"].as_str().unwrap();
        let unit = p["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or("");
        let mut queries = Vec::new();
        exprs(&p["targets"], &mut queries);
        assert!(!queries.is_empty(), "{title}: no queries");
        for q in &queries {
            let sels = selectors(q);
            assert!(!sels.is_empty(), "{title}: {q}");
            for (name, labels) in sels {
                assert!(
                    labels
                        .split(',')
                        .any(|l| l.trim() == "instance=~\"$instance\""),
                    "{title}: {name} is not filtered by $instance in {q}"
                );
            }
        }
        let time_unit = TIME_UNITS.contains(&unit);
        if queries.iter().all(|q| in_seconds(q)) {
            assert!(time_unit, "{title}: durations shown in {unit:?}");
        } else {
            assert!(
                !time_unit,
                "{title}: counts or rates on a {unit:?} axis: {queries:?}"
            );
        }
    }
}

/// After a few requests `/metrics` has the HTTP series labelled by route template (never the raw
/// path) and status class, with their latency histogram; the build info (this crate's version
/// and the commit it was built from); and the process metrics.
#[tokio::test]
async fn http_requests_build_info_and_process_metrics_are_exposed() {
    let app = spawn_app().await;
    app.board("mb", json!({})).await;
    for _ in 0..3 {
        assert_eq!(app.get("/v1/boards/mb/top").await.status, 200);
    }
    assert_eq!(app.get("/v1/boards/mb/players/nobody").await.status, 404);
    assert_eq!(app.get("/no-such-route/x").await.status, 404);

    let text = app.metrics().await;
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert!(
        value(
            r#"scorecast_http_requests_total{method="GET",route="/v1/boards/{board}/top",status="2xx"}"#
        ) >= 3.0
    );
    assert!(
        value(
            r#"scorecast_http_requests_total{method="GET",route="/v1/boards/{board}/players/{player}",status="4xx"}"#
        ) >= 1.0
    );
    assert!(
        value(
            r#"scorecast_http_request_duration_seconds_count{method="GET",route="/v1/boards/{board}/top",status="2xx"}"#
        ) >= 3.0
    );
    assert!(
        value(
            r#"scorecast_http_requests_total{method="PUT",route="/admin/boards/{board}",status="2xx"}"#
        ) >= 1.0
    );
    assert!(
        value(r#"scorecast_http_requests_total{method="GET",route="files",status="4xx"}"#) >= 1.0,
        "an unrouted path is the file service's 404"
    );
    for raw in ["/v1/boards/mb", "/no-such-route"] {
        assert!(
            !text.contains(&format!("route=\"{raw}")),
            "no raw path {raw} as a route label"
        );
    }

    let commit = scorecast_tests::scorecast_server::metrics::GIT_COMMIT;
    assert_eq!(
        value(&format!(
            r#"scorecast_build_info{{git_commit="{commit}",version="{}"}}"#,
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if !head.is_empty() {
        assert!(
            head.starts_with(commit),
            "built from this checkout's commit: {commit} vs HEAD {head}"
        );
    }

    assert!(value("process_resident_memory_bytes") > 0.0);
    assert!(value("process_open_fds") > 0.0);
    assert!(value("process_start_time_seconds") > 1.0e9);
}

/// Every command Redis has run so far, summed over `INFO commandstats`.
async fn redis_commands(app: &scorecast_tests::TestApp) -> u64 {
    app.redis_command_counts().await.values().sum()
}

/// `/metrics` costs Redis O(1) per scrape whatever the number of queues: with 100 queues, the
/// first scrape reads them (and shows them), and 20 more scrapes cost fewer Redis commands in
/// all than one read of the queues would (about 7 per queue: 700), and no queue read at all
/// (the refresh interval, 60 s here, has not passed). Read at every scrape, they would cost
/// 14 000.
#[tokio::test]
async fn metrics_scrapes_cost_redis_nothing_per_queue() {
    let app = scorecast_tests::spawn_app_with(
        |s| {
            s.workers = false;
            s.metrics.queue_refresh_ms = 60_000;
        },
        scorecast_tests::scorecast_server::clock::Clock::Redis,
    )
    .await;
    for i in 0..100 {
        let q = app
            .state
            .queues
            .get(&scorecast_tests::id(&format!("scrape-q-{i:03}")));
        let job = scorecast_tests::scorecast_server::queue::NewJob::new(
            &scorecast_tests::id("k"),
            &json!({}),
        )
        .unwrap();
        q.enqueue(job).await.unwrap();
    }
    let first = app.metrics().await;
    assert!(
        first.contains(r#"scorecast_queue_jobs{queue="scrape-q-099",state="ready"} 1"#),
        "the first scrape shows the queues"
    );

    let zcard_before = app.redis_command_calls("zcard").await;
    let before = redis_commands(&app).await;
    for _ in 0..20 {
        app.metrics().await;
    }
    let cost = redis_commands(&app).await - before;
    let zcard = app.redis_command_calls("zcard").await - zcard_before;
    println!("20 scrapes with 100 queues: {cost} Redis commands ({zcard} ZCARD)");
    assert_eq!(zcard, 0, "a scrape read queue depths");
    assert!(
        cost < 100,
        "20 scrapes cost {cost} Redis commands (one queue read is about 700)"
    );
}

/// The cached queue gauges do follow the queues: with a 200 ms refresh interval, a job enqueued
/// after the first scrape shows up in a later scrape (polled, bounded).
#[tokio::test]
async fn cached_queue_gauges_are_refreshed() {
    let app = scorecast_tests::spawn_app_with(
        |s| {
            s.workers = false;
            s.metrics.queue_refresh_ms = 200;
        },
        scorecast_tests::scorecast_server::clock::Clock::Redis,
    )
    .await;
    let q = app.state.queues.get(&scorecast_tests::id("fresh-gauges"));
    let job = |k| {
        scorecast_tests::scorecast_server::queue::NewJob::new(&scorecast_tests::id(k), &json!({}))
            .unwrap()
    };
    q.enqueue(job("a")).await.unwrap();
    assert!(app
        .metrics()
        .await
        .contains(r#"scorecast_queue_jobs{queue="fresh-gauges",state="ready"} 1"#));
    q.enqueue(job("b")).await.unwrap();
    let deadline = std::time::Instant::now() + scorecast_tests::EVENTUALLY;
    while !app
        .metrics()
        .await
        .contains(r#"scorecast_queue_jobs{queue="fresh-gauges",state="ready"} 2"#)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the gauge never showed the second job"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// With `metrics.token` set, `/metrics` refuses a request without it or with another one (401)
/// and answers one bearing it, or the admin token (the admin console's).
#[tokio::test]
async fn metrics_can_require_a_token() {
    let token = "metrics-token-0123456789abcdef0123456789";
    let app = scorecast_tests::spawn_app_with(
        |s| {
            s.metrics.token = Some(scorecast_tests::scorecast_server::auth::Secret::new(token));
        },
        scorecast_tests::scorecast_server::clock::Clock::Redis,
    )
    .await;
    let url = app.url("/metrics");
    let none = app.http.get(&url).send().await.unwrap();
    assert_eq!(none.status(), 401);
    let wrong = app.http.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = app.http.get(&url).bearer_auth(token).send().await.unwrap();
    assert_eq!(right.status(), 200);
    assert!(right
        .text()
        .await
        .unwrap()
        .contains("scorecast_ws_connections"));
    // The admin console reads it with the admin token.
    let admin = app
        .http
        .get(&url)
        .bearer_auth(scorecast_tests::ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(admin.status(), 200);
}
