//! What a WebSocket client cannot do to the server: stall it with sockets it never reads, flood
//! it with messages, or slip an oversize message past the limit in fragments. Real server,
//! real sockets; each test failed on the code before these limits.

use std::collections::HashSet;
use std::time::Duration;

use futures_util::SinkExt;
use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_server::config::WsSettings;
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::{server_tcp_sockets, spawn_app_with, TestApp};
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

/// Bounds a wait for something the server does by itself (never a synchronisation sleep).
const WITHIN: Duration = Duration::from_secs(20);

/// Server-side TCP connections (local port `port`) whose peer port is one of `peers`, in any
/// state but TIME_WAIT/CLOSE: what the kernel still holds for those clients.
fn server_sockets(port: u16, peers: &HashSet<u16>) -> usize {
    server_tcp_sockets(port)
        .iter()
        .filter(|(peer, _)| peers.contains(peer))
        .count()
}

/// A board whose `top 100` is a few KiB, so a spectator that never reads backs up fast.
async fn busy_board(app: &TestApp, board: &str) {
    app.board(board, json!({"submit_limit": null})).await;
    for i in 0..100 {
        app.score(board, &format!("filler-with-a-long-name-{i:03}"), 1000 + i)
            .await;
    }
}

/// Spectators that subscribe to `top 100` and then never read get their connections aborted:
/// the kernel holds nothing for them afterwards, and until then they count against the
/// per-address cap (a new connection is refused while any of them is still there).
#[tokio::test]
async fn stalled_spectators_are_really_disconnected_and_keep_their_slots_until_then() {
    let cap = 4;
    let app = spawn_app_with(
        |s| {
            s.max_conns_per_addr = cap;
            s.ws = WsSettings {
                slow_client_ms: 500,
                coalesce_ms: 5,
                ..WsSettings::default()
            };
        },
        Clock::Redis,
    )
    .await;
    busy_board(&app, "stall").await;

    let mut stalled = Vec::new();
    let mut peers = HashSet::new();
    for _ in 0..cap {
        let mut c = WsClient::connect_small_buffer(&app.ws_url(), app.port, 4096).await;
        let snap = c.subscribe("stall", "top", json!({"limit": 100})).await;
        assert_eq!(snap["type"], "top", "{snap}");
        peers.insert(c.local_port());
        stalled.push(c); // never read again
    }
    assert_eq!(server_sockets(app.port, &peers), cap as usize);
    // At the cap: one more is refused.
    let refused = WsClient::try_connect(&app.ws_url(), None).await;
    assert!(refused.is_err(), "a connection over the cap was accepted");

    // Keep the top changing and keep connecting: every connection admitted must find a slot
    // that a stalled socket really gave up (held + admitted <= cap; held only ever falls),
    // until all `cap` slots are back and the kernel holds nothing for the stalled clients.
    let deadline = tokio::time::Instant::now() + WITHIN;
    let mut admitted = Vec::new();
    let mut points = 10_000;
    while admitted.len() < cap as usize {
        assert!(
            tokio::time::Instant::now() < deadline,
            "stalled sockets still held after {WITHIN:?}: {} of {cap}",
            server_sockets(app.port, &peers)
        );
        for _ in 0..20 {
            points += 1;
            app.score("stall", "mover", points).await;
        }
        while let Ok(mut fresh) = WsClient::try_connect(&app.ws_url(), None).await {
            assert!(matches!(
                fresh.next_within(WAIT).await,
                Some(Incoming::Json(_))
            ));
            admitted.push(fresh);
            let held = server_sockets(app.port, &peers);
            assert!(
                held + admitted.len() <= cap as usize,
                "{} admitted while {held} stalled sockets are still open (cap {cap})",
                admitted.len()
            );
        }
    }
    assert_eq!(server_sockets(app.port, &peers), 0);
    drop(stalled);
}

/// A connection that sends faster than `max_messages_per_sec` gets `rate_limited` with
/// `retry_after_ms` for what is over (a submission is `rejected` with its id, and changes
/// nothing), and is closed with 1008 when it keeps going.
#[tokio::test]
async fn a_flooding_connection_is_limited_then_closed() {
    let app = spawn_app_with(
        |s| {
            s.ws.max_messages_per_sec = 10;
        },
        Clock::Redis,
    )
    .await;
    app.board("flood", json!({"submit_limit": null})).await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    c.hello(&app.token("flooder", None)).await; // 1 message

    // 19 more pings fit the burst of 2 × 10.
    for _ in 0..19 {
        c.send_json(json!({"type": "ping"})).await;
        assert_eq!(c.next_json().await["type"], "pong");
    }
    // Over the limit: a ping gets an error, a submit a rejection carrying its id.
    c.send_json(json!({"type": "ping"})).await;
    let e = c.next_json().await;
    assert_eq!(e["type"], "error", "{e}");
    assert_eq!(e["code"], "rate_limited", "{e}");
    assert!(
        e["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| (1..=1000).contains(&ms)),
        "{e}"
    );
    c.send_json(json!({"type": "submit", "id": "over", "board": "flood", "points": 5}))
        .await;
    let r = c.next_json().await;
    assert_eq!(r["type"], "rejected", "{r}");
    assert_eq!(r["id"], "over", "{r}");
    assert_eq!(r["code"], "rate_limited", "{r}");
    assert!(r["retry_after_ms"].as_u64().is_some(), "{r}");
    let who = app.get("/v1/boards/flood/players/flooder").await;
    assert_eq!(
        who.status, 404,
        "a refused submission changed the board: {:?}",
        who.body
    );

    // Keeping on: closed with 1008 (a second's worth of refused messages).
    for _ in 0..20 {
        c.send_json(json!({"type": "ping"})).await;
    }
    assert_eq!(c.expect_close(WAIT).await, Some(1008));
}

/// The limit is on by default; 0 turns it off.
#[tokio::test]
async fn the_message_limit_is_on_by_default() {
    let defaults = WsSettings::default();
    assert!(defaults.max_messages_per_sec > 0);
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    let burst = 2 * defaults.max_messages_per_sec as usize;
    // 10 over the burst: the bucket refills at 50/s while they are sent, so on a loaded machine
    // a few more than the burst may pass (10 would take 200 ms), but not all.
    let sent = burst + 10;
    for _ in 0..sent {
        c.send_json(json!({"type": "ping"})).await;
    }
    let mut codes = Vec::new();
    for _ in 0..sent {
        let m = c.next_json().await;
        codes.push(m["code"].as_str().unwrap_or("pong").to_owned());
    }
    let pongs = codes.iter().filter(|c| *c == "pong").count();
    assert!((burst..sent).contains(&pongs), "{pongs} pongs: {codes:?}");
    assert!(
        codes[..burst].iter().all(|c| c == "pong"),
        "the burst passes: {codes:?}"
    );
    assert!(
        codes.iter().all(|c| c == "pong" || c == "rate_limited"),
        "{codes:?}"
    );
}

/// A message sent as 4 KiB fragments that adds up to more than the 16 KiB limit is closed with
/// 1009 (message too big), like a single oversize frame — not 1002.
#[tokio::test]
async fn an_oversize_message_in_fragments_is_closed_with_1009() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    let chunk = vec![b' '; 4096];
    c.ws.send(Message::Frame(Frame::message(
        chunk.clone(),
        OpCode::Data(Data::Text),
        false,
    )))
    .await
    .expect("first fragment");
    for i in 0..5 {
        let last = i == 4;
        if c.ws
            .send(Message::Frame(Frame::message(
                chunk.clone(),
                OpCode::Data(Data::Continue),
                last,
            )))
            .await
            .is_err()
        {
            break; // the server may already have closed
        }
    }
    assert_eq!(c.expect_close(WAIT).await, Some(1009));
    // The refusal changed nothing for the next client.
    let r = app.call(Method::GET, "/healthz", None, false).await;
    assert_eq!(r.status, 200);
}

/// What a paced sender saw: how its connection ended and what it was answered.
struct Paced {
    /// The close code (`Some(None)`: ended without one) and when, from the first message.
    closed: Option<(Option<u16>, Duration)>,
    rate_limited: usize,
    answers: usize,
}

/// Sends `make()` at `per_sec` (in 10 ms steps) for at most `for_`, reading everything the
/// server answers meanwhile; stops at the close.
async fn pace(c: WsClient, per_sec: u32, for_: Duration, make: impl Fn() -> Message) -> Paced {
    use futures_util::StreamExt;
    let (mut tx, mut rx) = c.ws.split();
    let start = tokio::time::Instant::now();
    let reader = tokio::spawn(async move {
        let mut seen = Paced {
            closed: None,
            rate_limited: 0,
            answers: 0,
        };
        // Bounded: the sender stops after `for_`, and the server's timeout ends the rest.
        while let Ok(m) = tokio::time::timeout(WITHIN, rx.next()).await {
            match m {
                Some(Ok(Message::Text(t))) => {
                    seen.answers += 1;
                    if t.contains("\"rate_limited\"") {
                        seen.rate_limited += 1;
                    }
                }
                Some(Ok(Message::Close(f))) => {
                    seen.closed = Some((f.map(|f| u16::from(f.code)), start.elapsed()));
                    break;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => {
                    seen.closed = Some((None, start.elapsed()));
                    break;
                }
            }
        }
        seen
    });
    let every = (Duration::from_secs(1) / per_sec).max(Duration::from_millis(10));
    let per_step = (f64::from(per_sec) * every.as_secs_f64()).round().max(1.0) as u32;
    let mut step = tokio::time::interval(every);
    'send: while start.elapsed() < for_ && !reader.is_finished() {
        step.tick().await;
        for _ in 0..per_step {
            if tx.send(make()).await.is_err() {
                break 'send;
            }
        }
    }
    if !reader.is_finished() {
        let bye = tokio_tungstenite::tungstenite::protocol::CloseFrame {
            code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: "done".into(),
        };
        let _ = tx.send(Message::Close(Some(bye))).await;
    }
    reader.await.expect("reader task")
}

/// Sustained over-limit traffic is closed: text pings paced at 30x the default limit (1 500/s
/// for up to 6 s) get 1008 within the documented grace (one second's worth of refusals, about
/// 0.1 s at this rate) plus a 3 s margin for a loaded machine, having been answered
/// `rate_limited` no more than the refusal budget allows; a client at 90% of the limit for 6 s
/// is never refused nor closed.
#[tokio::test]
async fn a_sustained_flood_is_closed_and_a_client_under_the_limit_is_not() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let limit = WsSettings::default().max_messages_per_sec;
    assert_eq!(limit, 50, "the test's rates are written for the default");
    let ping = || Message::text(json!({"type": "ping"}).to_string());

    let flood = pace(
        WsClient::connect(&app.ws_url()).await,
        30 * limit,
        Duration::from_secs(6),
        ping,
    )
    .await;
    let (code, at) = flood.closed.expect("the flood was never closed");
    assert_eq!(code, Some(1008), "closed after {at:?}");
    assert!(at < Duration::from_secs(3), "closed only after {at:?}");
    let budget = f64::from(limit) * (1.0 + at.as_secs_f64() / 3.0) + 1.0;
    assert!(
        (flood.rate_limited as f64) <= budget,
        "{} rate_limited answers in {at:?} (budget {budget})",
        flood.rate_limited
    );

    let polite = pace(
        WsClient::connect(&app.ws_url()).await,
        limit * 9 / 10,
        Duration::from_secs(6),
        ping,
    )
    .await;
    assert_eq!(polite.rate_limited, 0);
    assert!(polite.answers >= 200, "{} answers", polite.answers);
    assert!(
        matches!(polite.closed, Some((Some(1000), _))),
        "the polite client's own close should be echoed: {:?}",
        polite.closed.map(|(c, _)| c)
    );
}

/// WebSocket ping frames count against the limit too: a pings-only flood at 30x the limit is
/// closed with 1008 within the grace plus a 3 s margin.
#[tokio::test]
async fn a_flood_of_ping_frames_is_closed() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let limit = WsSettings::default().max_messages_per_sec;
    let flood = pace(
        WsClient::connect(&app.ws_url()).await,
        30 * limit,
        Duration::from_secs(6),
        || Message::Ping(Default::default()),
    )
    .await;
    let (code, at) = flood.closed.expect("the ping flood was never closed");
    assert_eq!(code, Some(1008), "closed after {at:?}");
    assert!(at < Duration::from_secs(3), "closed only after {at:?}");
}
