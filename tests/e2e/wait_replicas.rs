//! `[redis] wait_replicas` against a Redis that has no replica, so `WAIT` really runs out of
//! time: README "A shard failover…" says the batch is then answered `unavailable`.

use reqwest::Method;
use scorecast_tests::*;
use serde_json::json;
use std::time::{Duration, Instant};

const WAIT_TIMEOUT_MS: u64 = 300;

/// With `wait_replicas = 1` and no replica, a submission is answered 503 `unavailable` only
/// after `WAIT` held it for `wait_timeout_ms` (not at once: the wait really ran); it was
/// applied, so its retry through an instance that does not wait answers the first result as a
/// duplicate and the score counts once.
#[tokio::test]
async fn a_write_no_replica_acknowledges_in_time_is_answered_unavailable() {
    let app = spawn_app_with(
        |s| {
            s.redis.wait_replicas = 1;
            s.redis.wait_timeout_ms = WAIT_TIMEOUT_MS;
        },
        scorecast_server::clock::Clock::Redis,
    )
    .await;
    app.board("w", json!({"op": "incr"})).await;
    let path = "/admin/boards/w/players/ann/score";
    let body = json!({"points": 7, "id": "s1"});
    let t = Instant::now();
    let r = app.admin(Method::POST, path, body.clone()).await;
    let took = t.elapsed();
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (503, "unavailable"),
        "no replica confirmed it: {:?}",
        r.body
    );
    assert!(
        took >= Duration::from_millis(WAIT_TIMEOUT_MS),
        "answered after {took:?}, before WAIT's {WAIT_TIMEOUT_MS} ms ran out"
    );
    let plain = app.second_instance().await;
    let again = app
        .http
        .post(plain.url(path))
        .bearer_auth(ADMIN_TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let again: serde_json::Value = again.json().await.unwrap();
    assert_eq!(
        (again["duplicate"].clone(), again["score"].clone()),
        (json!(true), json!(7)),
        "the unacknowledged write was applied once: {again}"
    );
}
