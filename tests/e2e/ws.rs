//! WebSocket protocol v1 (docs/protocol.md) with real tokio-tungstenite clients against the real
//! server and real redis-server processes.

use std::time::{Duration, Instant};

use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_shared::Id;
use scorecast_tests::ws::{expired_token, foreign_token, none_alg_token, Incoming, WsClient, WAIT};
use scorecast_tests::{spawn_app, spawn_app_with, TestApp};
use serde_json::{json, Value};

/// How long a test waits for a push: a bound on failure only (push latency is measured by
/// `cargo xtask bench`, not by tests on a loaded machine).
const PUSH_WITHIN: Duration = WAIT;

/// (player, score) of a `top`/`around` message's entries.
fn rows(v: &Value) -> Vec<(String, i64)> {
    v["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {v}"))
        .iter()
        .map(|e| {
            (
                e["player"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn score_of(v: &Value, player: &str) -> Option<i64> {
    rows(v)
        .into_iter()
        .find(|(p, _)| p == player)
        .map(|(_, s)| s)
}

/// A player's connection, past `hello`.
async fn player(app: &TestApp, name: &str) -> WsClient {
    let mut c = WsClient::connect(&app.ws_url()).await;
    let w = c.hello(&app.token(name, None)).await;
    assert_eq!(w["type"], "welcome", "{w}");
    assert_eq!(w["player"], name, "{w}");
    c
}

/// The article's example over WebSocket: each ack carries the player's score, rank and
/// previous rank; a retry with the same id is a duplicate that changes nothing.
#[tokio::test]
async fn article_example_over_websocket() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let (mut alice, mut bob, mut carol) = (
        player(&app, "alice").await,
        player(&app, "bob").await,
        player(&app, "carol").await,
    );

    let a = alice.submit("a-1", "b", 120).await;
    assert_eq!(
        a,
        json!({"type":"ack","id":"a-1","board":"b","season":"all","score":120,"rank":1,"previous_rank":null,"duplicate":false})
    );
    let b = bob.submit("b-1", "b", 95).await;
    assert_eq!(
        (b["score"].as_i64(), b["rank"].as_u64()),
        (Some(95), Some(2)),
        "{b}"
    );
    let c = carol.submit("c-1", "b", 150).await;
    assert_eq!(
        (c["score"].as_i64(), c["rank"].as_u64()),
        (Some(150), Some(1)),
        "{c}"
    );
    let b = bob.submit("b-2", "b", 60).await;
    assert_eq!(
        b,
        json!({"type":"ack","id":"b-2","board":"b","season":"all","score":155,"rank":1,"previous_rank":3,"duplicate":false})
    );

    let again = bob.submit("b-2", "b", 60).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["score"], 155, "the retry returns the first result");

    let mut watcher = WsClient::connect(&app.ws_url()).await;
    let top = watcher.subscribe("b", "top", json!({"limit": 3})).await;
    assert_eq!(
        rows(&top),
        vec![
            ("bob".into(), 155),
            ("carol".into(), 150),
            ("alice".into(), 120)
        ]
    );
    assert_eq!(top["total"], 3);
    let me = alice.subscribe("b", "me", json!({})).await;
    assert_eq!(
        (me["rank"].as_u64(), me["score"].as_i64()),
        (Some(3), Some(120)),
        "{me}"
    );
}

/// A spectator's `top` view receives every change, and its `seq` only grows.
#[tokio::test]
async fn spectator_top_follows_changes_and_seq_only_grows() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut alice = player(&app, "alice").await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    let snap = spectator.subscribe("b", "top", json!({})).await;
    assert_eq!(snap["total"], 0);
    let mut last_seq = snap["seq"].as_u64().unwrap();

    let mut expected = 0;
    for (i, points) in [10, 25, 7, 100].into_iter().enumerate() {
        expected += points;
        let ack = alice.submit(&format!("s-{i}"), "b", points).await;
        assert_eq!(ack["score"], expected);
        // Every push on the way must carry a larger seq than the one before.
        let seen = spectator
            .recv_until(PUSH_WITHIN, |v| {
                v["type"] == "top" && {
                    let seq = v["seq"].as_u64().unwrap();
                    assert!(seq > last_seq, "seq {seq} after {last_seq}: {v}");
                    last_seq = seq;
                    score_of(v, "alice") == Some(expected)
                }
            })
            .await;
        assert_eq!(seen["board"], "b");
        assert!(seen.get("resync").is_none(), "{seen}");
    }
}

/// Alice's `me` view reports her new rank when Bob overtakes her, without her doing anything.
#[tokio::test]
async fn me_view_fires_when_overtaken() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut alice = player(&app, "alice").await;
    let mut bob = player(&app, "bob").await;
    alice.submit("a-1", "b", 120).await;
    bob.submit("b-1", "b", 100).await;
    let me = alice.subscribe("b", "me", json!({})).await;
    assert_eq!(me["rank"], 1, "{me}");
    let around = alice.subscribe("b", "around", json!({"radius": 1})).await;
    assert_eq!(
        rows(&around),
        vec![("alice".into(), 120), ("bob".into(), 100)]
    );

    let ack = bob.submit("b-2", "b", 50).await;
    assert_eq!(ack["rank"], 1);

    // Both views push (in either order).
    let (mut me, mut around) = (Value::Null, Value::Null);
    let t = Instant::now();
    while me.is_null() || around.is_null() {
        let v = alice
            .recv_until(PUSH_WITHIN.saturating_sub(t.elapsed()), |v| {
                v["type"] == "rank" || v["type"] == "around"
            })
            .await;
        if v["type"] == "rank" {
            me = v
        } else {
            around = v
        }
    }
    assert_eq!(me["player"], "alice");
    assert_eq!(
        (
            me["rank"].as_u64(),
            me["previous_rank"].as_u64(),
            me["score"].as_i64()
        ),
        (Some(2), Some(1), Some(120)),
        "{me}"
    );
    assert_eq!(
        rows(&around),
        vec![("bob".into(), 150), ("alice".into(), 120)]
    );

    // A spectator cannot watch a player view.
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    let err = spectator.subscribe("b", "me", json!({})).await;
    assert_eq!(
        (err["type"].as_str(), err["code"].as_str()),
        (Some("error"), Some("unauthorized")),
        "{err}"
    );
}

/// Two instances on one Redis: a score submitted through one reaches a viewer on the other, and
/// `notify` reaches a player wherever they are connected.
#[tokio::test]
async fn instances_share_changes_through_redis() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let b = app.second_instance().await;
    let (url_b, state_b) = (b.ws_url(), b.state.clone());

    let mut viewer_on_b = WsClient::connect(&url_b).await;
    viewer_on_b.subscribe("b", "top", json!({})).await;
    let mut alice_on_a = player(&app, "alice").await;
    alice_on_a.submit("a-1", "b", 42).await;
    let top = viewer_on_b
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && score_of(v, "alice") == Some(42)
        })
        .await;
    assert_eq!(top["total"], 1);

    // notify from instance B reaches alice's session on instance A (through Redis).
    let alice = Id::parse("alice").unwrap();
    let mut reached = (0, 0);
    for _ in 0..50 {
        // The instance subscribes to alice's channel right after her hello; retry until it has.
        reached = state_b
            .hub
            .notify(&alice, "reward", json!({"gold": 5}))
            .await
            .expect("notify");
        if reached.1 > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(reached, (0, 1), "no local session on B, one other instance");
    let n = alice_on_a.recv_type("notify").await;
    assert_eq!(
        n,
        json!({"type":"notify","kind":"reward","payload":{"gold":5}})
    );
}

/// A client that never reads is closed with 1008 once its queue stays full, while another client
/// keeps receiving every change on time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_closed_1008_and_others_keep_up() {
    never_reading_client_is_closed(Some(4)).await;
}

/// The same with the default outbound queue, which a stalled client never fills (its view
/// updates replace each other): the stalled socket alone gets it closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_client_is_closed_1008_with_the_default_queue() {
    never_reading_client_is_closed(None).await;
}

async fn never_reading_client_is_closed(outbound_queue: Option<usize>) {
    const BOARDS: usize = 6;
    const PLAYERS: usize = 100;
    let app = spawn_app_with(
        |s| {
            if let Some(q) = outbound_queue {
                s.ws.outbound_queue = q;
            }
            s.ws.slow_client_ms = 500;
        },
        Clock::Redis,
    )
    .await;
    // Boards of 100 players, so that each `top 100` push is several KiB.
    for b in 0..BOARDS {
        app.board(&format!("b{b}"), json!({})).await;
        let app = &app;
        let seeds = (0..PLAYERS).map(|p| async move {
            app.score(&format!("b{b}"), &format!("player-{p:03}"), 1000 + p as i64)
                .await
        });
        futures_util::future::join_all(seeds).await;
    }
    let mut slow = WsClient::connect_small_buffer(&app.ws_url(), app.port, 4096).await;
    for b in 0..BOARDS {
        let snap = slow
            .subscribe(&format!("b{b}"), "top", json!({"limit": 100}))
            .await;
        assert_eq!(snap["entries"].as_array().unwrap().len(), PLAYERS);
    }
    let mut fast = WsClient::connect(&app.ws_url()).await;
    fast.subscribe("b0", "top", json!({"limit": 100})).await;
    assert_eq!(app.state.hub.sessions(), 2);

    // From here on `slow` is never polled. Keep every board changing until the server gives up
    // on it, while `fast` must see each board-0 change promptly.
    let started = Instant::now();
    let mut round = 0i64;
    while app.state.hub.sessions() > 1 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the slow client was never closed"
        );
        round += 1;
        let app = &app;
        let changes = (0..BOARDS).map(|b| async move {
            app.score(
                &format!("b{b}"),
                &format!("player-{:03}", round % PLAYERS as i64),
                1,
            )
            .await
        });
        futures_util::future::join_all(changes).await;
        let marker = 5000 + round;
        app.score("b0", "marker", if round == 1 { marker } else { 1 })
            .await;
        fast.recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && score_of(v, "marker") == Some(marker)
        })
        .await;
    }
    // The server aborted the slow connection while the client was not reading: reading now, the
    // client finds it closed — with 1008 when the close frame got through, reset otherwise (the
    // frame is best effort to a client that does not read) — never still open.
    let end = loop {
        match slow.next_within(Duration::from_secs(10)).await {
            Some(Incoming::Json(_)) => continue,
            other => break other,
        }
    };
    assert!(
        matches!(end, Some(Incoming::Closed(Some(1008) | None))),
        "{end:?}"
    );
    // And the fast client is still served.
    app.score("b0", "marker", 1).await;
    fast.recv_until(PUSH_WITHIN, |v| {
        v["type"] == "top" && score_of(v, "marker") == Some(5000 + round + 1)
    })
    .await;
}

/// Every bad frame gets its `error` or `rejected` (with the submission id) and the session goes
/// on; bad tokens leave the session a spectator; nothing reaches Redis.
#[tokio::test]
async fn bad_input_gets_its_error_and_changes_nothing() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    app.score("b", "alice", 10).await;
    let before = app.dump().await;
    let mut c = WsClient::connect(&app.ws_url()).await;

    c.send_text("{not json").await;
    let e = c.next_json().await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("error"), Some("bad_request")),
        "{e}"
    );
    c.send_json(json!({"type": "fly"})).await;
    assert_eq!(c.next_json().await["code"], "bad_request");
    c.send_json(json!({"type": "ping"})).await;
    assert_eq!(
        c.next_json().await,
        json!({"type": "pong"}),
        "the session goes on"
    );

    let r = c.submit("s-1", "b", 5).await;
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("rejected"), Some("unauthorized")),
        "submit before hello: {r}"
    );
    c.send_text(r#"{"type":"submit","id":"s-2","board":"b","points":1.5}"#)
        .await;
    assert_eq!(c.answer_to("s-2").await["code"], "points_out_of_range");
    c.send_json(json!({"type": "submit", "id": "s-3", "board": "b", "points": "lots"}))
        .await;
    let r = c.answer_to("s-3").await;
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("rejected"), Some("bad_request")),
        "{r}"
    );
    c.send_json(json!({"type": "submit", "id": "s-4", "board": "b{x}", "points": 1}))
        .await;
    assert_eq!(c.answer_to("s-4").await["code"], "invalid_id");

    for (i, (what, token)) in [
        ("another secret", foreign_token("alice")),
        ("expired", expired_token("alice")),
        ("alg none", none_alg_token("alice")),
        ("garbage", "x.y.z".to_owned()),
    ]
    .into_iter()
    .enumerate()
    {
        let e = c.hello(&token).await;
        assert_eq!(
            (e["type"].as_str(), e["code"].as_str()),
            (Some("error"), Some("unauthorized")),
            "{what}: {e}"
        );
        let r = c.submit(&format!("t-{i}"), "b", 1000).await;
        assert_eq!(r["code"], "unauthorized", "{what}: still a spectator: {r}");
    }

    // A player's own errors: unknown board, and another player's token.
    let w = c.hello(&app.token("alice", None)).await;
    assert_eq!(w["player"], "alice");
    let r = c.submit("u-1", "nope", 1).await;
    assert_eq!(r["code"], "unknown_board", "{r}");
    let e = c.hello(&app.token("bob", None)).await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("error"), Some("forbidden")),
        "{e}"
    );
    let e = c.subscribe("b", "top", json!({"limit": 101})).await;
    assert_eq!(e["code"], "bad_request");
    let e = c.subscribe("nope", "top", json!({})).await;
    assert_eq!(e["code"], "unknown_board");

    // An oversize frame closes the socket with 1009.
    c.send_text(format!(
        r#"{{"type":"ping","pad":"{}"}}"#,
        "x".repeat(17 * 1024)
    ))
    .await;
    assert_eq!(c.expect_close(WAIT).await, Some(1009));

    assert_eq!(
        app.dump().await,
        before,
        "no refused input changed anything"
    );
}

/// A session holds at most `max_views_per_session` views; re-subscribing replaces one.
#[tokio::test]
async fn views_per_session_are_limited() {
    let app = spawn_app_with(|s| s.ws.max_views_per_session = 2, Clock::Redis).await;
    for b in ["b1", "b2", "b3"] {
        app.board(b, json!({})).await;
    }
    let mut c = WsClient::connect(&app.ws_url()).await;
    assert_eq!(c.subscribe("b1", "top", json!({})).await["type"], "top");
    assert_eq!(c.subscribe("b2", "top", json!({})).await["type"], "top");
    assert_eq!(
        c.subscribe("b2", "top", json!({"limit": 5})).await["type"],
        "top",
        "replacing is not adding"
    );
    assert_eq!(
        c.subscribe("b3", "top", json!({})).await["code"],
        "bad_request"
    );
    c.send_json(json!({"type": "unsubscribe", "board": "b1", "view": "top"}))
        .await;
    assert_eq!(c.subscribe("b3", "top", json!({})).await["type"], "top");
}

/// Upgrades from a foreign Origin are refused with 403; the server's own origin and clients
/// without an Origin are accepted.
#[tokio::test]
async fn foreign_origins_are_refused() {
    let app = spawn_app().await;
    match WsClient::try_connect(&app.ws_url(), Some("http://evil.example")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status(), 403),
        Err(e) => panic!("expected 403, got {e}"),
        Ok(_) => panic!("a foreign origin was accepted"),
    }
    let own = format!("http://127.0.0.1:{}", app.port);
    let mut c = WsClient::try_connect(&app.ws_url(), Some(&own))
        .await
        .expect("own origin");
    assert_eq!(c.next_json().await["type"], "welcome");
    let mut c = WsClient::try_connect(&app.ws_url(), None)
        .await
        .expect("no origin");
    assert_eq!(c.next_json().await["type"], "welcome");
}

/// Connections per client address are capped.
#[tokio::test]
async fn connections_per_address_are_capped() {
    let app = spawn_app_with(|s| s.max_conns_per_addr = 2, Clock::Redis).await;
    let _a = WsClient::connect(&app.ws_url()).await;
    let b = WsClient::connect(&app.ws_url()).await;
    // A third is refused 429 `rate_limited`, with the headers of any 429.
    match WsClient::try_connect(&app.ws_url(), None).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
            assert_eq!(res.status(), 429);
            let h = |name: &str| res.headers().get(name).and_then(|v| v.to_str().ok());
            assert_eq!(
                (
                    h("retry-after"),
                    h("ratelimit-limit"),
                    h("ratelimit-remaining")
                ),
                (Some("1"), Some("2"), Some("0"))
            );
            let body: Value = serde_json::from_slice(res.body().as_deref().unwrap_or_default())
                .expect("a JSON error body");
            assert_eq!(body["error"]["code"], "rate_limited", "{body}");
        }
        other => panic!("a third connection: {:?}", other.map(|_| ())),
    }
    drop(b);
    // The slot frees once the server notices the close.
    let deadline = Instant::now() + WAIT;
    while app.state.hub.sessions() > 1 {
        assert!(
            Instant::now() < deadline,
            "the closed session was never released"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    WsClient::try_connect(&app.ws_url(), None)
        .await
        .expect("a freed slot can be reused");
}

/// redis-server killed mid-session: submissions get `unavailable`; once it is back the same
/// session works, every view is resynced, and the retried id is counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_mid_session() {
    let mut app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut alice = player(&app, "alice").await;
    alice.submit("a-1", "b", 100).await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("b", "top", json!({})).await;
    alice.subscribe("b", "me", json!({})).await;

    app.redis.kill();
    alice
        .send_json(json!({"type":"submit","id":"a-2","board":"b","points":5}))
        .await;
    let r = alice
        .recv_until(Duration::from_secs(15), |v| v["id"] == "a-2")
        .await;
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("rejected"), Some("unavailable")),
        "{r}"
    );

    tokio::task::block_in_place(|| app.redis.restart()).expect("restart redis");
    // Views come back as fresh snapshots marked resync.
    let top = spectator
        .recv_until(Duration::from_secs(15), |v| {
            v["type"] == "top" && v["resync"] == true
        })
        .await;
    assert_eq!(score_of(&top, "alice"), Some(100));
    let me = alice
        .recv_until(Duration::from_secs(15), |v| {
            v["type"] == "rank" && v["resync"] == true
        })
        .await;
    assert_eq!(me["score"], 100);

    // The client retries a-2 (same id) until it is applied, then once more.
    let deadline = Instant::now() + Duration::from_secs(15);
    let ack = loop {
        let r = alice.submit("a-2", "b", 5).await;
        if r["type"] == "ack" {
            break r;
        }
        assert_eq!(r["code"], "unavailable", "{r}");
        assert!(Instant::now() < deadline, "submissions never recovered");
    };
    assert_eq!(
        (ack["score"].as_i64(), ack["duplicate"].as_bool()),
        (Some(105), Some(false)),
        "{ack}"
    );
    let again = alice.submit("a-2", "b", 5).await;
    assert_eq!(
        (again["score"].as_i64(), again["duplicate"].as_bool()),
        (Some(105), Some(true)),
        "{again}"
    );
    // The views follow again, in order from the resync.
    let resync_seq = top["seq"].as_u64().unwrap();
    let top = spectator
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && score_of(v, "alice") == Some(105)
        })
        .await;
    assert!(top["seq"].as_u64().unwrap() > resync_seq);
    let body = app.get("/v1/boards/b/players/alice").await.body;
    assert_eq!(body["score"], 105, "counted once: {body}");
}

/// Stopping the hub (what the signal handler does) closes every open socket with 1001 and lets
/// the hub drain; the stopped server accepts nothing. The SIGTERM path with submissions in
/// flight is `sigterm_answers_submissions_in_flight_and_closes_with_1001` (process.rs).
#[tokio::test]
async fn hub_shutdown_closes_sockets_with_1001() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut alice = player(&app, "alice").await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("b", "top", json!({})).await;

    app.state.hub.shutdown();
    assert_eq!(alice.expect_close(WAIT).await, Some(1001));
    assert_eq!(spectator.expect_close(WAIT).await, Some(1001));
    assert!(app.state.hub.drained(WAIT).await);
    app.handle.stop(true).await;
    assert!(
        WsClient::try_connect(&app.ws_url(), None).await.is_err(),
        "a stopped server accepts nothing"
    );
}

/// The heartbeat: the server pings, a client that answers (tungstenite pongs while it is
/// polled) outlives the timeout, and one that never reads (so never pongs) is dropped. The
/// proof that `live` outlived the timeout is that `silent`, connected after it, was dropped.
#[tokio::test]
async fn server_pings_and_drops_silent_clients() {
    let app = spawn_app_with(
        |s| {
            s.ws.ping_interval_ms = 100;
            s.ws.client_timeout_ms = 1_500;
        },
        Clock::Redis,
    )
    .await;
    let mut live = WsClient::connect(&app.ws_url()).await;
    let mut silent = WsClient::connect(&app.ws_url()).await;
    let deadline = Instant::now() + WAIT;
    while app.state.hub.sessions() > 1 {
        assert!(
            Instant::now() < deadline,
            "a silent client was never dropped"
        );
        // `live` keeps reading, so it answers the server's pings; nothing else arrives.
        if let Some(m) = live.next_within(Duration::from_millis(20)).await {
            panic!("the live client got {m:?}");
        }
    }
    live.send_json(json!({"type":"ping"})).await;
    assert_eq!(
        live.next_json().await["type"],
        "pong",
        "live is still served"
    );
    assert!(matches!(
        silent.next_within(WAIT).await,
        Some(Incoming::Closed(_))
    ));
}

/// A subscription waits for Redis without holding up its session: while Redis is busy, a
/// `ping` sent after the `subscribe` is answered at once, and the snapshot follows when Redis
/// is back.
#[tokio::test]
async fn a_slow_subscribe_does_not_hold_up_the_session() {
    let app = spawn_app().await;
    app.board("busy", json!({})).await;
    app.score("busy", "alice", 5).await;
    let mut client = WsClient::connect(&app.ws_url()).await;

    let mut probe = app.redis_conn().await;
    // Keep Redis busy for 1.5 s with a script that spins (scripts run one at a time).
    // Its own connection without a response timeout (redis-rs gives async connections 500 ms).
    let mut blocker = redis::Client::open(app.redis.url())
        .unwrap()
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .unwrap();
    let busy = tokio::spawn(async move {
        let _: () = redis::cmd("EVAL")
            .arg("local t = redis.call('TIME'); local stop = t[1] * 1000000 + t[2] + 1500000; repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop")
            .arg(0)
            .query_async(&mut blocker)
            .await
            .unwrap();
    });
    // Wait (bounded) until a PING on another connection no longer answers quickly: Redis is busy.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let cmd = redis::cmd("PING");
        let ping = cmd.query_async::<String>(&mut probe);
        if tokio::time::timeout(Duration::from_millis(100), ping)
            .await
            .is_err()
        {
            break;
        }
        assert!(Instant::now() < deadline, "Redis never got busy");
    }

    client
        .send_json(json!({"type": "subscribe", "board": "busy", "view": "top"}))
        .await;
    client.send_json(json!({"type": "ping"})).await;
    let first = client.next_json().await;
    assert_eq!(
        first["type"], "pong",
        "the pong waited for the snapshot: {first}"
    );
    assert!(!busy.is_finished(), "the pong waited for Redis");
    let snap = client.recv_type("top").await;
    assert_eq!(score_of(&snap, "alice"), Some(5));
    busy.await.unwrap();
}

/// The names of the pub/sub clients Redis has.
async fn pubsub_clients(app: &TestApp) -> usize {
    let mut c = app.redis_conn().await;
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut c)
        .await
        .unwrap();
    list.lines().filter(|l| !l.trim().is_empty()).count()
}

/// Only the pub/sub connection is killed (`CLIENT KILL TYPE pubsub`) and kept from
/// reconnecting while a score changes, so that change's event is lost for certain: once it is
/// back, every open view is re-sent as a fresh snapshot with `resync: true` that shows the
/// change, and ordering restarts from it.
#[tokio::test]
async fn views_resync_after_the_pubsub_connection_is_killed() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    app.score("b", "alice", 100).await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    let snap = spectator.subscribe("b", "top", json!({})).await;
    assert_eq!(score_of(&snap, "alice"), Some(100));
    let mut alice = player(&app, "alice").await;
    alice.subscribe("b", "me", json!({})).await;
    assert_eq!(pubsub_clients(&app).await, 1);

    app.redis.refuse_new_connections(true);
    let mut c = app.redis_conn_direct().await;
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut c)
        .await
        .unwrap();
    // The change happens while no instance listens: its event is lost.
    app.score("b", "alice", 5).await;
    app.redis.refuse_new_connections(false);

    let top = spectator
        .recv_until(WAIT, |v| v["type"] == "top" && v["resync"] == true)
        .await;
    assert_eq!(score_of(&top, "alice"), Some(105), "{top}");
    let me = alice
        .recv_until(WAIT, |v| v["type"] == "rank" && v["resync"] == true)
        .await;
    assert_eq!(me["score"], 105, "{me}");
    // Pushes go on after the resync, in order from it.
    app.score("b", "alice", 1).await;
    let next = spectator
        .recv_until(WAIT, |v| {
            v["type"] == "top" && score_of(v, "alice") == Some(106)
        })
        .await;
    assert!(
        next["seq"].as_u64() > top["seq"].as_u64(),
        "{next} after {top}"
    );
}

/// Redis loses its data (`FLUSHALL`): the board is configured again and scored, so its `seq`
/// starts over below what the views saw. Every open view is re-sent as a fresh snapshot with
/// `resync: true` showing the new state, and ordering restarts from it.
#[tokio::test]
async fn views_resync_when_redis_loses_its_data() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("b", "top", json!({})).await;
    for i in 1..=5 {
        app.score("b", "alice", i).await;
    }
    let before = spectator
        .recv_until(WAIT, |v| {
            v["type"] == "top" && score_of(v, "alice") == Some(15)
        })
        .await;
    let high = before["seq"].as_u64().unwrap();

    let mut c = app.redis_conn().await;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut c).await.unwrap();
    app.board("b", json!({})).await;
    app.score("b", "carol", 7).await;
    let fresh: i64 = redis::cmd("GET")
        .arg("lb:{b}:seq")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!((fresh as u64) < high, "seq went back: {fresh} < {high}");

    let top = spectator
        .recv_until(WAIT, |v| v["type"] == "top" && v["resync"] == true)
        .await;
    assert_eq!(rows(&top), vec![("carol".into(), 7)], "{top}");
    app.score("b", "dan", 3).await;
    let next = spectator
        .recv_until(WAIT, |v| {
            v["type"] == "top" && score_of(v, "dan") == Some(3)
        })
        .await;
    assert!(
        next["seq"].as_u64() > top["seq"].as_u64(),
        "{next} after {top}"
    );
    assert!(next.get("resync").is_none(), "{next}");
}

/// Coalescing: a burst of 40 changes reaches a `top` view as at most one message per
/// `coalesce_ms` window (plus the first), and the last message is the latest state.
#[tokio::test]
async fn pushes_are_coalesced_to_one_per_window() {
    const WINDOW_MS: u64 = 300;
    let app = spawn_app_with(|s| s.ws.coalesce_ms = WINDOW_MS, Clock::Redis).await;
    app.board("b", json!({})).await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("b", "top", json!({})).await;

    let started = Instant::now();
    for _ in 0..40 {
        app.score("b", "alice", 1).await;
    }
    let mut pushes = 0;
    let last = spectator
        .recv_until(WAIT, |v| {
            pushes += usize::from(v["type"] == "top");
            v["type"] == "top" && score_of(v, "alice") == Some(40)
        })
        .await;
    let windows = started.elapsed().as_millis() as usize / WINDOW_MS as usize;
    assert!(
        pushes <= windows + 2,
        "{pushes} pushes for 40 changes in {} windows",
        windows + 1
    );
    assert_eq!(rows(&last), vec![("alice".into(), 40)]);
    // Nothing stale follows the latest state.
    spectator.send_json(json!({"type": "ping"})).await;
    let after = spectator
        .recv_until(WAIT, |v| v["type"] == "top" || v["type"] == "pong")
        .await;
    assert_eq!(after["type"], "pong", "{after}");
}

/// `unsubscribe` stops a view's pushes; the session's other views go on.
#[tokio::test]
async fn unsubscribe_stops_the_views_pushes() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let mut alice = player(&app, "alice").await;
    alice.submit("a-1", "b", 100).await;
    alice.subscribe("b", "top", json!({})).await;
    alice.subscribe("b", "me", json!({})).await;
    alice
        .send_json(json!({"type": "unsubscribe", "board": "b", "view": "top"}))
        .await;
    // The unsubscribe is processed before the ping that follows it.
    alice.send_json(json!({"type": "ping"})).await;
    alice.recv_type("pong").await;

    let mut bob = player(&app, "bob").await;
    bob.submit("b-1", "b", 200).await; // overtakes alice: her `me` fires, a top would too
    let me = alice
        .recv_until(WAIT, |v| {
            assert_ne!(v["type"], "top", "a push after unsubscribe: {v}");
            v["type"] == "rank"
        })
        .await;
    assert_eq!(me["rank"], 2, "{me}");
    alice.send_json(json!({"type": "ping"})).await;
    alice
        .recv_until(WAIT, |v| {
            assert_ne!(v["type"], "top", "a push after unsubscribe: {v}");
            v["type"] == "pong"
        })
        .await;
}

/// A player not on the board: `me` is `rank: null, score: null`, `around` has no entries; once
/// they score, `me` fires with their rank.
#[tokio::test]
async fn me_and_around_for_an_absent_player() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    app.score("b", "alice", 10).await;
    let mut carol = player(&app, "carol").await;
    let me = carol.subscribe("b", "me", json!({})).await;
    assert_eq!(
        (&me["type"], &me["player"], &me["rank"], &me["score"]),
        (&json!("rank"), &json!("carol"), &Value::Null, &Value::Null),
        "{me}"
    );
    let around = carol.subscribe("b", "around", json!({})).await;
    assert_eq!(around["entries"], json!([]), "{around}");
    carol.submit("c-1", "b", 5).await;
    let me = carol
        .recv_until(WAIT, |v| v["type"] == "rank" && v["score"] == 5)
        .await;
    assert_eq!(
        (me["rank"].as_u64(), &me["previous_rank"]),
        (Some(2), &Value::Null)
    );
}

/// Over WebSocket: the board's limit answers `rate_limited` with `retry_after_ms` and changes
/// nothing; a retry of an applied id is still a duplicate ack; an out-of-range result is
/// `score_out_of_range`; invalid ids are `invalid_id` — each `rejected` with its id.
#[tokio::test]
async fn limits_ranges_and_ids_are_rejected_over_websocket() {
    let app = spawn_app().await;
    app.board(
        "lim",
        json!({"submit_limit": {"limit": 2, "window_ms": 60_000}}),
    )
    .await;
    app.board("pe", json!({"tie_break": "earliest", "time_bits": 26}))
        .await;
    let mut alice = player(&app, "alice").await;
    assert_eq!(alice.submit("a-1", "lim", 1).await["type"], "ack");
    assert_eq!(alice.submit("a-2", "lim", 1).await["type"], "ack");
    let max = (1i64 << 27) - 1;
    assert_eq!(alice.submit("p-1", "pe", max).await["score"], max);
    let before = app.dump().await;

    let r = alice.submit("a-3", "lim", 1).await;
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("rejected"), Some("rate_limited")),
        "{r}"
    );
    let retry = r["retry_after_ms"].as_u64().expect("retry_after_ms");
    assert!((1..=60_000).contains(&retry), "{r}");
    let again = alice.submit("a-2", "lim", 1).await;
    assert_eq!(
        (again["type"].as_str(), again["duplicate"].as_bool()),
        (Some("ack"), Some(true)),
        "{again}"
    );

    let r = alice.submit("p-2", "pe", 1).await;
    assert_eq!(
        (r["type"].as_str(), r["code"].as_str()),
        (Some("rejected"), Some("score_out_of_range")),
        "{r}"
    );

    let long = "x".repeat(65);
    for (sid, board) in [
        ("a b", "pe"),
        ("a:b", "pe"),
        ("{x}", "pe"),
        (long.as_str(), "pe"),
        ("ok-id", "p:e"),
        ("ok-id", ""),
    ] {
        alice
            .send_json(json!({"type": "submit", "id": sid, "board": board, "points": 1}))
            .await;
        let r = alice
            .recv_until(WAIT, |v| v["type"] == "rejected" || v["type"] == "error")
            .await;
        assert_eq!(
            (r["type"].as_str(), r["code"].as_str()),
            (Some("rejected"), Some("invalid_id")),
            "{sid:?} on {board:?}: {r}"
        );
    }
    let mut c = WsClient::connect(&app.ws_url()).await;
    let e = c.subscribe("p{e}", "top", json!({})).await;
    assert_eq!(e["code"], "invalid_id", "{e}");
    assert_eq!(app.dump().await, before, "no rejection changed anything");
}
