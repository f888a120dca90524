//! WebSocket and HTTP edges as README states them: a binary frame is `bad_request` and the
//! session stays; a ping control frame gets its pong; the default message limit is 50/s with
//! bursts of 100; a stalled client is closed (1008, then its connection reset) within
//! `slow_client_ms` plus a margin; a request head of more than 32 KiB gets 431, one of exactly
//! 32 KiB passes.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use scorecast_server::clock::Clock;
use scorecast_server::config::WsSettings;
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

/// A binary frame is answered `error` `bad_request`; the session is still open and still
/// authenticated: a submission after it is acknowledged.
#[tokio::test]
async fn a_binary_frame_is_a_bad_request_and_the_session_stays() {
    let app = spawn_app().await;
    app.board("w", json!({})).await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    assert_eq!(c.hello(&app.token("ann", None)).await["type"], "welcome");
    c.ws.send(Message::Binary(vec![1u8, 2, 3].into()))
        .await
        .unwrap();
    let e = c.next_json().await;
    assert_eq!(
        (&e["type"], &e["code"]),
        (&json!("error"), &json!("bad_request")),
        "{e}"
    );
    let ack = c.submit("s1", "w", 5).await;
    assert_eq!(
        (&ack["type"], &ack["score"]),
        (&json!("ack"), &json!(5)),
        "{ack}"
    );
}

/// A WebSocket ping control frame is answered by a pong with the same payload.
#[tokio::test]
async fn a_clients_ping_gets_a_pong() {
    let app = spawn_app().await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    c.ws.send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let m = tokio::time::timeout_at(deadline, c.ws.next())
            .await
            .expect("a pong in time")
            .expect("the connection is open")
            .unwrap();
        match m {
            Message::Pong(p) => {
                assert_eq!(&p[..], b"are you there");
                break;
            }
            Message::Ping(_) => {} // the server's own heartbeat
            other => panic!("expected the pong, got {other:?}"),
        }
    }
}

/// With default settings a connection may send 100 messages at once (bursts of 100) and then
/// 50 per second: of 145 pings sent back to back (fewer than 50 over, which would close the
/// connection), the first 100 are answered and the next
/// ones are `rate_limited` — allowing one more for each 20 ms the burst took to arrive — with
/// a `retry_after_ms` of at most 20 ms (one message per 20 ms at 50/s).
#[tokio::test]
async fn the_default_message_limit_is_50_per_second_with_bursts_of_100() {
    const RATE: u64 = 50;
    const BURST: usize = 100;
    let app = spawn_app().await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    let started = Instant::now();
    for _ in 0..BURST + 45 {
        c.send_json(json!({"type": "ping"})).await;
    }
    let mut pongs = 0;
    let limited = loop {
        match c.next_within(WAIT).await {
            Some(Incoming::Json(m)) if m["type"] == "pong" => pongs += 1,
            Some(Incoming::Json(m)) => break m,
            other => panic!("{pongs} pongs, then {other:?} instead of a refusal"),
        }
    };
    let took = started.elapsed();
    assert_eq!(limited["code"], "rate_limited", "{limited}");
    let refill = (took.as_millis() as u64 * RATE / 1000) as usize;
    assert!(
        (BURST..=BURST + refill).contains(&pongs),
        "{pongs} pongs before the first refusal ({took:?} after the first message)"
    );
    let retry = limited["retry_after_ms"].as_u64().unwrap_or(0);
    assert!(
        (1..=1000 / RATE).contains(&retry),
        "retry_after_ms {retry}: {limited}"
    );
}

/// The server-side TCP connection of the server at `port` with the client port `peer`, in any
/// state but TIME_WAIT/CLOSE: its send queue (bytes the client has not taken), or None when
/// the server holds no such socket.
fn server_socket(port: u16, peer: u16) -> Option<u64> {
    server_tcp_sockets(port)
        .into_iter()
        .find_map(|(p, queued)| (p == peer).then_some(queued))
}

/// The stalled-client promise's `slow_client_ms` here, and the margin over it: the check's
/// tick (a quarter of the window), the test's polling of the socket table, and scheduling on a
/// loaded 2-core machine.
const SLOW_MS: u64 = 500;
const SLOW_MARGIN_MS: u64 = 750;

/// A spectator that stops reading while its `top 100` keeps changing is gone — the server
/// holds no socket for it — within `slow_client_ms` plus [`SLOW_MARGIN_MS`] of the moment its
/// socket stalled (the server's send queue for it last grew: from then on it took nothing),
/// and what it finds when it reads again ends with a 1008 close or a reset
/// (README: the 1008 frame is best effort, the connection is reset after it), nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_client_is_closed_within_slow_client_ms() {
    let app = spawn_app_with(
        |s| {
            s.ws = WsSettings {
                slow_client_ms: SLOW_MS,
                coalesce_ms: 5,
                ..WsSettings::default()
            };
        },
        Clock::Redis,
    )
    .await;
    app.board("stall", json!({"op": "set"})).await;
    for i in 0..100 {
        app.score("stall", &format!("player-with-a-long-name-{i:03}"), i)
            .await;
    }
    let mut c = WsClient::connect_small_buffer(&app.ws_url(), app.port, 4096).await;
    let snap = c.subscribe("stall", "top", json!({"limit": 100})).await;
    assert_eq!(snap["type"], "top", "{snap}");
    let peer = c.local_port();
    assert!(server_socket(app.port, peer).is_some());

    // From here on the client does not read; the top keeps changing (bounded).
    let started = Instant::now();
    let bound = Duration::from_millis(SLOW_MS + SLOW_MARGIN_MS);
    // When the send queue last grew: from then on the socket took nothing more.
    let (mut queued_max, mut stalled) = (0, started);
    let mut points = 1_000;
    while let Some(queued) = server_socket(app.port, peer) {
        if queued > queued_max {
            (queued_max, stalled) = (queued, Instant::now());
        }
        assert!(
            started.elapsed() < 10 * bound,
            "the stalled client still has its socket after {:?}",
            started.elapsed()
        );
        points += 1;
        app.score("stall", "mover", points).await;
    }
    assert!(queued_max > 0, "the socket never held anything unsent");
    let took = stalled.elapsed();
    eprintln!(
        "stalled client closed {took:?} after its socket stalled ({:?} after it stopped reading)",
        started.elapsed()
    );
    assert!(
        took <= bound,
        "closed {took:?} after it stalled, more than {bound:?}"
    );
    let end = loop {
        match c.next_within(WAIT).await {
            Some(Incoming::Json(_)) => {}
            other => break other,
        }
    };
    assert!(
        matches!(end, Some(Incoming::Closed(Some(1008) | None))),
        "ended with {end:?}, not 1008 or a reset"
    );
}

/// Sends `head` (a request head ending in the blank line) and returns the status code, or
/// None when the server closed without answering.
async fn status_of(port: u16, head: &str) -> Option<u16> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(head.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut buf))
        .await
        .expect("an answer in time")
        .ok()?;
    let text = String::from_utf8_lossy(&buf);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A request head of exactly `len` bytes as sent (request line, headers, blank line).
fn head_of(len: usize) -> String {
    let bare = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: \r\n\r\n";
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(len - bare.len())
    );
    assert_eq!(head.len(), len);
    head
}

/// 32 KiB of request head pass; one byte more is 431.
#[tokio::test]
async fn a_request_head_is_refused_exactly_past_32_kib() {
    let app = spawn_app().await;
    assert_eq!(status_of(app.port, &head_of(32 * 1024)).await, Some(200));
    assert_eq!(
        status_of(app.port, &head_of(32 * 1024 + 1)).await,
        Some(431)
    );
}
