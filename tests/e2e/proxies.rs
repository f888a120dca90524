//! Trusted proxies: the per-address read limit and connection cap count the client named by the
//! forwarding header only when the TCP peer is a configured proxy; from anyone else such headers
//! are ignored.

use reqwest::Method;
use scorecast_server::client_addr::ForwardedHeader;
use scorecast_server::clock::Clock;
use scorecast_tests::*;
use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// Opens a WebSocket from 127.0.0.1 with one extra header; the HTTP status of a refusal as Err.
async fn ws_with(
    app: &TestApp,
    header: (&'static str, &str),
) -> Result<scorecast_tests::ws::Ws, u16> {
    let mut req = app.ws_url().into_client_request().unwrap();
    req.headers_mut()
        .insert(header.0, HeaderValue::from_str(header.1).unwrap());
    match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => Err(res.status().as_u16()),
        Err(e) => panic!("upgrade failed: {e}"),
    }
}

async fn read(app: &TestApp, from: [u8; 4], header: (&str, &str)) -> Resp {
    app.request_from(from, Method::GET, "/v1/boards/b/top", &[header])
        .await
}

/// Without trusted proxies (the default), a client that writes a different `X-Forwarded-For`
/// or `Forwarded` on every request is still one address: its fourth read of three is refused,
/// and its third WebSocket of two.
#[tokio::test]
async fn spoofed_forwarding_headers_from_an_untrusted_peer_are_ignored() {
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 3;
            s.public_limit.window_ms = 60_000;
            s.max_conns_per_addr = 2;
        },
        Clock::Redis,
    )
    .await;
    app.board("b", json!({})).await;
    let spoofs = [
        ("x-forwarded-for", "198.51.100.1"),
        ("forwarded", "for=198.51.100.2"),
        ("x-forwarded-for", "198.51.100.3"),
    ];
    for h in spoofs {
        assert_eq!(read(&app, [127, 0, 0, 1], h).await.status, 200);
    }
    let r = read(&app, [127, 0, 0, 1], ("x-forwarded-for", "198.51.100.4")).await;
    assert_eq!((r.status.as_u16(), r.code()), (429, "rate_limited"));

    let _a = ws_with(&app, ("x-forwarded-for", "198.51.100.1"))
        .await
        .unwrap();
    let _b = ws_with(&app, ("forwarded", "for=198.51.100.2"))
        .await
        .unwrap();
    assert_eq!(
        ws_with(&app, ("x-forwarded-for", "198.51.100.3"))
            .await
            .err(),
        Some(429),
        "the third connection from one peer, whatever it claims"
    );
}

/// Behind a trusted proxy (127.0.0.1), each forwarded client has its own read allowance and
/// its own connection slots; a client that prepends a fake hop is still counted by the hop the
/// proxy appended (the rightmost untrusted one); a peer that is not the proxy (127.0.0.2)
/// counts as itself, its header ignored.
#[tokio::test]
async fn behind_a_trusted_proxy_real_client_addresses_count_separately() {
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 3;
            s.public_limit.window_ms = 60_000;
            s.max_conns_per_addr = 1;
            s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
        },
        Clock::Redis,
    )
    .await;
    app.board("b", json!({})).await;
    let ann = ("x-forwarded-for", "198.51.100.1");
    for remaining in ["2", "1", "0"] {
        let r = read(&app, [127, 0, 0, 1], ann).await;
        assert_eq!(r.headers["ratelimit-remaining"], remaining);
    }
    assert_eq!(read(&app, [127, 0, 0, 1], ann).await.status, 429);
    let spoof = ("x-forwarded-for", "203.0.113.50, 198.51.100.1");
    assert_eq!(
        read(&app, [127, 0, 0, 1], spoof).await.status,
        429,
        "a prepended hop does not buy a fresh allowance"
    );
    let bob = read(&app, [127, 0, 0, 1], ("x-forwarded-for", "198.51.100.2")).await;
    assert_eq!(bob.status, 200, "another client behind the same proxy");
    assert_eq!(bob.headers["ratelimit-remaining"], "2");
    let direct = read(&app, [127, 0, 0, 2], ann).await;
    assert_eq!(direct.status, 200, "an untrusted peer is itself, not ann");
    assert_eq!(direct.headers["ratelimit-remaining"], "2");

    let _ann_ws = ws_with(&app, ann).await.expect("ann's first connection");
    let _bob_ws = ws_with(&app, ("x-forwarded-for", "198.51.100.2"))
        .await
        .expect("bob has his own slot");
    assert_eq!(ws_with(&app, ann).await.err(), Some(429), "ann's second");
}

/// `forwarded_header = "forwarded"`: RFC 7239 `for=` names the client, and `X-Forwarded-For`
/// (which such a proxy passes through as the client wrote it) is not believed.
#[tokio::test]
async fn the_forwarded_header_when_configured() {
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 1;
            s.public_limit.window_ms = 60_000;
            s.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            s.forwarded_header = ForwardedHeader::Forwarded;
        },
        Clock::Redis,
    )
    .await;
    app.board("b", json!({})).await;
    let ann = ("forwarded", "for=\"[2001:db8::1]:4711\";proto=https");
    assert_eq!(read(&app, [127, 0, 0, 1], ann).await.status, 200);
    assert_eq!(read(&app, [127, 0, 0, 1], ann).await.status, 429);
    let bob = ("forwarded", "for=198.51.100.2");
    assert_eq!(read(&app, [127, 0, 0, 1], bob).await.status, 200);
    // X-Forwarded-For is not read: these count as the proxy itself, once.
    let xff = ("x-forwarded-for", "198.51.100.3");
    assert_eq!(read(&app, [127, 0, 0, 1], xff).await.status, 200);
    let xff2 = ("x-forwarded-for", "198.51.100.4");
    assert_eq!(read(&app, [127, 0, 0, 1], xff2).await.status, 429);
}
