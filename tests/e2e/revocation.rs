//! Token revocation (README "Defaults that protect a deployment", "Revocation"): a token without
//! `iat` is covered, a revocation reaches a live session on another instance within
//! `revocation_poll_ms` plus a round trip, and its record is kept for the maximum token
//! lifetime plus a minute, then dropped.

use std::time::{Duration, Instant};

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_tests::ws::{now_s, token_with, WsClient};
use scorecast_tests::*;
use serde_json::json;

/// The poll period the test configures (the default).
const POLL_MS: u64 = 250;
/// Margin over `POLL_MS` for the round trips (the revoke request, the poll's script, the
/// probing submission) and the scheduling of a loaded 2-core machine.
const MARGIN_MS: u64 = 250;

async fn revoke(app: &TestApp, player: &str) -> i64 {
    let r = app
        .admin(
            Method::POST,
            &format!("/admin/players/{player}/revoke"),
            json!(null),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["revoked_at_ms"].as_i64().unwrap()
}

/// A token without `iat` counts as issued before the revocation: the session that used it
/// has its next submission rejected `unauthorized`, saying it was revoked (the score unchanged),
/// and a new `hello`
/// with it is refused; a token issued afterwards works.
#[tokio::test]
async fn a_token_without_iat_is_covered_by_a_revocation() {
    let app = spawn_app().await;
    app.board("r", json!({"submit_limit": null})).await;
    let no_iat = token_with(json!({"sub": "alice", "exp": now_s() + 600}));
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&no_iat).await["type"], "welcome");
    assert_eq!(ws.submit("a1", "r", 5).await["type"], "ack");
    revoke(&app, "alice").await;
    let r = ws.submit("a2", "r", 1).await;
    assert_eq!(
        (&r["type"], &r["code"]),
        (&json!("rejected"), &json!("unauthorized")),
        "{r}"
    );
    assert!(
        r["message"].as_str().unwrap().contains("revocation"),
        "says why: {r}"
    );
    assert_eq!(app.get("/v1/boards/r/players/alice").await.body["score"], 5);
    let mut again = WsClient::connect(&app.ws_url()).await;
    assert_eq!(again.hello(&no_iat).await["code"], "unauthorized");
    assert_eq!(
        again.hello(&app.token("alice", None)).await["type"],
        "welcome"
    );
}

/// Revoked through one instance, a live session on another instance has its submissions
/// refused within `revocation_poll_ms` (250) plus [`MARGIN_MS`], counted from before the
/// revoke request was sent; the probe submits every 10 ms (the message limit is off for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_another_instance_within_the_poll_period() {
    let tweak = |s: &mut scorecast_server::config::Settings| {
        s.auth.revocation_poll_ms = POLL_MS;
        s.ws.max_messages_per_sec = 0;
    };
    let app = spawn_app_with(tweak, Clock::Redis).await;
    app.board("r", json!({"submit_limit": null})).await;
    let b = app.second_instance_with(tweak).await;
    let mut ws = WsClient::connect(&b.ws_url()).await;
    assert_eq!(ws.hello(&app.token("alice", None)).await["type"], "welcome");
    assert_eq!(ws.submit("a0", "r", 1).await["type"], "ack");

    let sent = Instant::now();
    revoke(&app, "alice").await;
    let mut n = 0;
    let took = loop {
        n += 1;
        let a = ws.submit(&format!("a{n}"), "r", 1).await;
        if a["type"] == "rejected" {
            assert_eq!(a["code"], "unauthorized", "{a}");
            break sent.elapsed();
        }
        assert!(
            sent.elapsed() < Duration::from_millis(10 * (POLL_MS + MARGIN_MS)),
            "still accepted: {a}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!("revocation reached the other instance's session after {took:?}");
    assert!(
        took <= Duration::from_millis(POLL_MS + MARGIN_MS),
        "took {took:?}: more than revocation_poll_ms {POLL_MS} ms + {MARGIN_MS} ms"
    );
}

/// A revocation record is kept for the maximum token lifetime plus a minute (the longest a
/// token it covers can still be accepted, leeway included): `sc:{revoked}` expires that long
/// after the last revocation, and a later revocation drops the record once it is older than
/// that, not a millisecond before (clock injected).
#[tokio::test]
async fn a_revocation_record_is_kept_for_the_maximum_lifetime_plus_a_minute() {
    const T0: i64 = 1_741_608_000_000;
    const LIFETIME_S: u64 = 3_600;
    let keep_ms = (LIFETIME_S * 1000 + 60_000) as i64;
    let app = spawn_app_with(
        |s| s.auth.max_token_lifetime_s = LIFETIME_S,
        Clock::manual(T0),
    )
    .await;
    let mut c = app.redis_conn().await;
    assert_eq!(revoke(&app, "alice").await, T0);
    let ttl: i64 = redis::cmd("PTTL")
        .arg("sc:{revoked}")
        .query_async(&mut c)
        .await
        .unwrap();
    // Redis counts the TTL in its own time: 30 s of margin for a slow machine.
    assert!(
        (keep_ms - 30_000..=keep_ms).contains(&ttl),
        "sc:{{revoked}} expires in {ttl} ms, not {keep_ms}"
    );
    let at = |c: &mut redis::aio::MultiplexedConnection| {
        let mut c = c.clone();
        async move {
            redis::cmd("ZSCORE")
                .arg("sc:{revoked}")
                .arg("alice")
                .query_async::<Option<i64>>(&mut c)
                .await
                .unwrap()
        }
    };
    app.clock.set(T0 + keep_ms);
    revoke(&app, "bob").await;
    assert_eq!(at(&mut c).await, Some(T0), "kept through lifetime + 1 min");
    app.clock.set(T0 + keep_ms + 1);
    revoke(&app, "carol").await;
    assert_eq!(at(&mut c).await, None, "dropped once older");
}
