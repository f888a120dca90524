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
    let text = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();

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
    value("scorecast_queue_jobs{queue=\"scorecast\",state=\"delayed\"}");
    value("scorecast_queue_lag_seconds{queue=\"scorecast\"}");
}
