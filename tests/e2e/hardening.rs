//! Hardening: the holes an outside probe found, each against the real server and real
//! redis-server processes. Each test fails if its hole opens again.

use std::time::{Duration, Instant};

use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_server::startup::Application;
use scorecast_tests::scorecast_server::state::AppState;
use scorecast_tests::ws::{WsClient, WAIT};
use scorecast_tests::{spawn_app, spawn_app_with, test_settings, TestApp, TOKEN_SECRET};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// A second server instance on the same Redis as `app`.
async fn second_instance(app: &TestApp) -> (u16, AppState, actix_web::dev::ServerHandle) {
    let second = Application::build_with_clock(test_settings(&app.redis.url()), Clock::Redis)
        .await
        .expect("second instance");
    let (port, state, handle) = (second.port(), second.state().clone(), second.handle());
    tokio::spawn(second.run_until_stopped());
    (port, state, handle)
}

/// A player's connection to `ws_url`, past `hello` with `token`.
async fn player_on(ws_url: &str, token: &str, name: &str) -> WsClient {
    let mut c = WsClient::connect(ws_url).await;
    let w = c.hello(token).await;
    assert_eq!(w["type"], "welcome", "{w}");
    assert_eq!(w["player"], name, "{w}");
    c
}

fn now_s() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(claims: Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(TOKEN_SECRET.as_bytes()),
    )
    .expect("sign")
}

/// `scorecast_redis_errors_total` as `/metrics` shows it.
pub(crate) async fn redis_errors(app: &TestApp) -> u64 {
    let text = app.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix("scorecast_redis_errors_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no scorecast_redis_errors_total in\n{text}"))
}

/// Sends raw bytes as one HTTP/1.1 request and returns the status line's code, or None when the
/// server closed (or reset) the connection without answering.
async fn raw_http(port: u16, request: &[u8]) -> Option<u16> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    // The server may refuse before reading everything: a failed write is an answer too.
    if s.write_all(request).await.is_err() {
        return None;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(_) => panic!("no answer and no close within {WAIT:?}"),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
}

/// A board created without `submit_limit` limits a burst from one player (the default, 10 per
/// second); `"submit_limit": null` still means unlimited. The clock is frozen, so the whole
/// burst falls in one window however slow the machine.
#[tokio::test]
async fn boards_are_limited_by_default_and_null_means_unlimited() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(1_800_000_000_000)).await;
    let d = app.board("d", json!({})).await;
    assert_eq!(
        d.body["submit_limit"],
        json!({"limit": 10, "window_ms": 1000}),
        "{:?}",
        d.body
    );
    let u = app.board("u", json!({"submit_limit": null})).await;
    assert!(u.body["submit_limit"].is_null(), "{:?}", u.body);

    let mut c = player_on(&app.ws_url(), &app.token("flood", None), "flood").await;
    for board in ["d", "u"] {
        for i in 0..30 {
            c.send_json(json!({"type": "submit", "id": format!("{board}-{i}"), "board": board, "points": 1}))
                .await;
        }
        let (mut acked, mut limited) = (0, 0);
        for i in 0..30 {
            let a = c.answer_to(&format!("{board}-{i}")).await;
            match (a["type"].as_str(), a["code"].as_str()) {
                (Some("ack"), _) => acked += 1,
                (Some("rejected"), Some("rate_limited")) => {
                    assert!(a["retry_after_ms"].as_u64().unwrap_or(0) > 0, "{a}");
                    limited += 1
                }
                _ => panic!("unexpected answer {a}"),
            }
        }
        let expected = if board == "d" { (10, 20) } else { (30, 0) };
        assert_eq!((acked, limited), expected, "board {board}");
    }
    let top = app.get("/v1/boards/d/top").await;
    assert_eq!(top.body["entries"][0]["score"], 10, "{:?}", top.body);
}

/// A token that lives longer than the maximum lifetime (30 days by default) is refused, and
/// `POST /admin/tokens` will not issue one.
#[tokio::test]
async fn tokens_beyond_the_maximum_lifetime_are_refused() {
    let app = spawn_app().await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    let ten_years = sign(json!({"sub": "alice", "exp": now_s() + 10 * 365 * 86_400}));
    let e = c.hello(&ten_years).await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("error"), Some("unauthorized")),
        "{e}"
    );
    let also_with_iat = sign(json!({"sub": "alice", "iat": now_s(), "exp": now_s() + 40 * 86_400}));
    assert_eq!(c.hello(&also_with_iat).await["code"], "unauthorized");
    let a_day = sign(json!({"sub": "alice", "iat": now_s(), "exp": now_s() + 86_400}));
    assert_eq!(c.hello(&a_day).await["type"], "welcome");

    let too_long = app
        .admin(
            Method::POST,
            "/admin/tokens",
            json!({"player": "bob", "ttl_s": 10 * 365 * 86_400}),
        )
        .await;
    assert_eq!(
        (too_long.status.as_u16(), too_long.code()),
        (400, "bad_request"),
        "{:?}",
        too_long.body
    );
    let longest = app
        .admin(
            Method::POST,
            "/admin/tokens",
            json!({"player": "bob", "ttl_s": 30 * 86_400}),
        )
        .await;
    assert_eq!(longest.status, 200, "{:?}", longest.body);
    let mut b = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        b.hello(longest.body["token"].as_str().unwrap()).await["player"],
        "bob"
    );
}

/// Revoking a player on one instance makes every token of theirs issued before it invalid on
/// another instance within a second: a session that authenticated earlier gets its next
/// submissions rejected `unauthorized`, a new `hello` with the old token is refused, a token
/// issued afterwards works, and other players are untouched.
#[tokio::test]
async fn a_revoked_token_is_refused_on_a_second_instance() {
    let app = spawn_app().await;
    app.board("r", json!({"submit_limit": null})).await;
    let (port_b, _state_b, _handle_b) = second_instance(&app).await;
    let ws_b = format!("ws://127.0.0.1:{port_b}/ws");
    let old = app.token("alice", None);
    let mut alice = player_on(&ws_b, &old, "alice").await;
    let mut bob = player_on(&ws_b, &app.token("bob", None), "bob").await;
    assert_eq!(alice.submit("a-0", "r", 5).await["type"], "ack");

    let r = app
        .admin(Method::POST, "/admin/players/alice/revoke", json!(null))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(
        r.body["revoked_at_ms"].as_i64().unwrap_or(0) > 0,
        "{:?}",
        r.body
    );
    let revoked = Instant::now();

    // The second instance learns of it by polling: submit until it says no.
    let mut n = 0;
    let refusal = loop {
        n += 1;
        let a = alice.submit(&format!("a-{n}"), "r", 1).await;
        if a["type"] == "rejected" {
            break a;
        }
        // Polls at 40/s, under the connection's message limit (50/s by default).
        tokio::time::sleep(Duration::from_millis(25)).await;
        assert!(
            revoked.elapsed() < WAIT,
            "still accepted after {WAIT:?}: {a}"
        );
    };
    assert_eq!(refusal["code"], "unauthorized", "{refusal}");
    eprintln!(
        "revocation reached the second instance after {:?} ({n} submissions)",
        revoked.elapsed()
    );
    assert!(
        revoked.elapsed() < Duration::from_secs(1),
        "took {:?} to reach the second instance",
        revoked.elapsed()
    );
    let score_then = app.get("/v1/boards/r/players/alice").await.body["score"].clone();
    assert_eq!(
        alice.submit("a-again", "r", 1).await["code"],
        "unauthorized"
    );
    assert_eq!(
        app.get("/v1/boards/r/players/alice").await.body["score"],
        score_then
    );

    // The old token is refused on both instances; a fresh one works; bob is untouched.
    assert_eq!(alice.hello(&old).await["code"], "unauthorized");
    let mut on_a = WsClient::connect(&app.ws_url()).await;
    assert_eq!(on_a.hello(&old).await["code"], "unauthorized");
    let fresh = app.token("alice", None);
    assert_eq!(alice.hello(&fresh).await["type"], "welcome");
    assert_eq!(alice.submit("a-fresh", "r", 1).await["type"], "ack");
    assert_eq!(bob.submit("b-1", "r", 1).await["type"], "ack");

    let unknown = app
        .admin(Method::POST, "/admin/players/a:b/revoke", json!(null))
        .await;
    assert_eq!(unknown.code(), "invalid_id");
    let api = app.get("/openapi.json").await;
    assert!(
        api.body["paths"]["/admin/players/{player}/revoke"]["post"].is_object(),
        "the revocation endpoint is in the OpenAPI document"
    );
}

/// On a fresh Redis, reads are empty answers, not outages, and start-up work that lists boards
/// (the season-rollover scheduling) succeeds.
#[tokio::test]
async fn a_fresh_store_answers_empty() {
    let app = spawn_app().await;
    let boards = app.get("/v1/boards").await;
    assert_eq!(
        (boards.status.as_u16(), &boards.body),
        (200, &json!({"boards": []}))
    );
    let scheduled = scorecast_tests::scorecast_server::jobs::schedule_rollovers(&app.state).await;
    assert_eq!(scheduled.map_err(|e| e.to_string()), Ok(0));
    let top = app.get("/v1/boards/nope/top").await;
    assert_eq!((top.status.as_u16(), top.code()), (404, "unknown_board"));
    let q = app
        .call(Method::GET, "/admin/queues/empty", None, true)
        .await;
    assert_eq!(q.status, 200, "{:?}", q.body);
}

/// Out-of-range parameters are 400 `bad_request` and never count as Redis errors; the largest
/// allowed offset is an empty page.
#[tokio::test]
async fn out_of_range_parameters_are_bad_requests_not_outages() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    app.score("b", "alice", 10).await;
    let bad = [
        "/v1/boards/b/top?offset=9223372036854775807",
        "/v1/boards/b/top?offset=4294967296",
        "/v1/boards/b/top?offset=-1",
        "/v1/boards/b/top?limit=0",
        "/v1/boards/b/top?limit=101",
        "/v1/boards/b/top?limit=18446744073709551616",
        "/v1/boards/b/players/alice/around?radius=26",
        "/v1/boards/b/players/alice/around?radius=0",
    ];
    // Other tests in this binary may bump the process-wide counter at the same moment, so the
    // measurement is retried; a bad parameter that reached Redis would count in every attempt.
    let mut deltas = Vec::new();
    for _ in 0..5 {
        let before = redis_errors(&app).await;
        for path in bad {
            let r = app.get(path).await;
            assert_eq!(
                (r.status.as_u16(), r.code()),
                (400, "bad_request"),
                "{path}: {:?}",
                r.body
            );
        }
        let r = app
            .call(
                Method::GET,
                "/admin/queues/q/dead?offset=9223372036854775807",
                None,
                true,
            )
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "bad_request"),
            "{:?}",
            r.body
        );
        deltas.push(redis_errors(&app).await - before);
        if deltas.last() == Some(&0) {
            break;
        }
    }
    assert_eq!(
        deltas.last(),
        Some(&0),
        "redis errors counted per attempt: {deltas:?}"
    );
    let last = app.get("/v1/boards/b/top?offset=4294967295").await;
    assert_eq!(last.status, 200, "{:?}", last.body);
    assert_eq!(last.body["entries"], json!([]));
}

/// Ids made only of dots (`.`, `..`, `...`) are refused `invalid_id` wherever an id goes, and
/// nothing is written.
#[tokio::test]
async fn ids_made_only_of_dots_are_refused() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let before = app.dump().await;
    // Raw requests: an HTTP client would normalise the dot segments away.
    for id in [".", "..", "..."] {
        let body = "{}";
        let req = format!(
            "PUT /admin/boards/{id} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            scorecast_tests::ADMIN_TOKEN,
            body.len()
        );
        assert_eq!(
            raw_http(app.port, req.as_bytes()).await,
            Some(400),
            "board {id:?}"
        );
    }
    let t = app
        .admin(Method::POST, "/admin/tokens", json!({"player": ".."}))
        .await;
    assert_eq!(t.code(), "invalid_id", "{:?}", t.body);
    let j = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs",
            json!({"id": "...", "kind": "k"}),
        )
        .await;
    assert_eq!(j.code(), "invalid_id", "{:?}", j.body);
    let s = app.rollover("b", ".").await;
    assert_eq!(s.code(), "invalid_id", "{:?}", s.body);
    let mut c = player_on(&app.ws_url(), &app.token("alice", None), "alice").await;
    let r = c.submit("..", "b", 1).await;
    assert_eq!(r["code"], "invalid_id", "{r}");
    assert_eq!(app.dump().await, before, "a refused id changed something");
}

/// The Origin check compares with the configured (or the server's own) origins, never with the
/// `Host` header the client chose: Origin and Host both `evil.example` is refused with 403.
#[tokio::test]
async fn a_foreign_origin_is_refused_whatever_the_host_header_says() {
    let app = spawn_app().await;
    let upgrade = |origin: &str, host: Option<&str>| {
        let mut req = app.ws_url().into_client_request().unwrap();
        req.headers_mut()
            .insert("Origin", HeaderValue::from_str(origin).unwrap());
        if let Some(h) = host {
            req.headers_mut()
                .insert("Host", HeaderValue::from_str(h).unwrap());
        }
        tokio_tungstenite::connect_async(req)
    };
    match upgrade("http://evil.example", Some("evil.example")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status(), 403),
        Err(e) => panic!("expected 403, got {e}"),
        Ok(_) => panic!("Origin and Host both evil.example were accepted"),
    }
    for own in [
        format!("http://127.0.0.1:{}", app.port),
        format!("http://localhost:{}", app.port),
    ] {
        let (mut ws, _) = upgrade(&own, None)
            .await
            .unwrap_or_else(|e| panic!("{own}: {e}"));
        use futures_util::StreamExt;
        assert!(
            ws.next().await.is_some_and(|m| m.is_ok()),
            "{own}: no welcome"
        );
    }
}

/// Display names lose bidirectional controls (U+202E would flip the text around them) and
/// other invisible controls; markup stays as text (the pages render it with `textContent`).
#[tokio::test]
async fn display_names_lose_bidi_controls() {
    let app = spawn_app().await;
    app.board("b", json!({"submit_limit": null})).await;
    let name = "\u{202E}gnp.exe\u{2066}<b>x</b>\u{200F}";
    let token =
        sign(json!({"sub": "mallory", "iat": now_s(), "exp": now_s() + 3600, "name": name}));
    let mut c = player_on(&app.ws_url(), &token, "mallory").await;
    assert_eq!(c.submit("m-1", "b", 3).await["type"], "ack");
    let issued = app
        .admin(
            Method::POST,
            "/admin/tokens",
            json!({"player": "trent", "name": "\u{202D}trent\u{202C}"}),
        )
        .await;
    let mut t = player_on(
        &app.ws_url(),
        issued.body["token"].as_str().unwrap(),
        "trent",
    )
    .await;
    assert_eq!(t.submit("t-1", "b", 2).await["type"], "ack");
    let top = app.get("/v1/boards/b/top").await;
    assert_eq!(
        top.body["entries"][0]["name"], "gnp.exe<b>x</b>",
        "{:?}",
        top.body
    );
    assert_eq!(top.body["entries"][1]["name"], "trent", "{:?}", top.body);
}

/// A job cannot be parked beyond 366 days ahead (where it would never run nor dead-letter):
/// `run_at_ms` or `delay_ms` further out, or a nack's `delay_ms`, is `bad_request` and changes
/// nothing.
#[tokio::test]
async fn far_future_jobs_are_refused() {
    let app = spawn_app_with(|s| s.workers = false, Clock::Redis).await;
    let now_ms = chrono::Utc::now().timestamp_millis();
    let before = app.dump().await;
    for body in [
        json!({"kind": "k", "run_at_ms": 9_000_000_000_000_000_000i64}),
        json!({"kind": "k", "run_at_ms": now_ms + 2 * 365 * 86_400_000}),
        json!({"kind": "k", "delay_ms": 2i64 * 365 * 86_400_000}),
    ] {
        let r = app
            .admin(Method::POST, "/admin/queues/q/jobs", body.clone())
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "bad_request"),
            "{body}: {:?}",
            r.body
        );
    }
    assert_eq!(app.dump().await, before, "a refused job changed something");
    let ok = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs",
            json!({"id": "soon", "kind": "k", "delay_ms": 86_400_000}),
        )
        .await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);

    let now = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs",
            json!({"id": "now", "kind": "k"}),
        )
        .await;
    assert_eq!(now.status, 201, "{:?}", now.body);
    let claim = app
        .call(Method::POST, "/admin/queues/q/claim", None, true)
        .await;
    assert_eq!(claim.body["job"]["id"], "now", "{:?}", claim.body);
    let token = claim.body["lease"]["token"].clone();
    let nack = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs/now/nack",
            json!({"token": token, "delay_ms": 10u64 * 365 * 86_400_000}),
        )
        .await;
    assert_eq!(
        (nack.status.as_u16(), nack.code()),
        (400, "bad_request"),
        "{:?}",
        nack.body
    );
    let counts = app.call(Method::GET, "/admin/queues/q", None, true).await;
    assert_eq!(
        counts.body,
        json!({"ready": 0, "delayed": 1, "processing": 1, "dead": 0})
    );
}

/// A request head above 32 KiB is refused (431, or the connection closed), not served: 100 KiB
/// (which actix-web alone serves: it only refuses a head that overflows its 128 KiB read
/// buffer) and a megabyte in one header or in many. A few KiB of headers are still served.
#[tokio::test]
async fn request_heads_above_32_kib_are_refused() {
    let app = spawn_app().await;
    let one_header = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let many_headers = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{}Connection: close\r\n\r\n",
        (0..32)
            .map(|i| format!("X-H{i}: {}\r\n", "b".repeat(32 * 1024)))
            .collect::<String>()
    );
    let hundred_kib = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(100 << 10)
    );
    for (what, req) in [
        ("100 KiB", hundred_kib),
        ("1 MiB in one header", one_header),
        ("1 MiB in 32 headers", many_headers),
    ] {
        let status = raw_http(app.port, req.as_bytes()).await;
        assert!(
            matches!(status, None | Some(431)),
            "{what}: answered {status:?}"
        );
    }
    let normal = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        "c".repeat(8 * 1024)
    );
    assert_eq!(raw_http(app.port, normal.as_bytes()).await, Some(200));
}
