//! Identity and access from outside: tokens as a client holds them, over the
//! WebSocket, and the admin token endpoint.

use std::time::Instant;

use jsonwebtoken::Algorithm;
use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::ws::{now_s, signed, token_with, WsClient, WAIT};
use scorecast_tests::{spawn_app, spawn_app_with, TOKEN_SECRET};
use serde_json::{json, Value};

/// `hello` with `token` on a fresh spectator connection: the answer, and the connection.
async fn hello(url: &str, token: &str) -> (Value, WsClient) {
    let mut c = WsClient::connect(url).await;
    let answer = c.hello(token).await;
    (answer, c)
}

fn refused(answer: &Value) -> bool {
    answer["type"] == "error" && answer["code"] == "unauthorized"
}

/// `exp` is required, enforced with at most 30 s of leeway; `nbf` is honoured; only HS256.
/// Each refused token leaves the session a spectator whose submissions are refused.
#[tokio::test]
async fn tokens_need_exp_a_past_nbf_and_hs256() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let url = app.ws_url();
    let now = now_s();
    let cases: Vec<(&str, String, bool)> = vec![
        ("no exp", token_with(json!({"sub": "alice"})), false),
        (
            "expired 20 s ago: inside the leeway",
            token_with(json!({"sub": "alice", "exp": now - 20})),
            true,
        ),
        (
            "expired 40 s ago: beyond the 30 s leeway",
            token_with(json!({"sub": "alice", "exp": now - 40})),
            false,
        ),
        (
            "nbf 2 minutes ahead",
            token_with(json!({"sub": "alice", "exp": now + 3600, "nbf": now + 120})),
            false,
        ),
        (
            "fractional exp and nbf (NumericDates may be)",
            token_with(
                json!({"sub": "alice", "exp": now as f64 + 3600.5, "nbf": now as f64 - 9.5}),
            ),
            true,
        ),
        (
            "nbf passed",
            token_with(json!({"sub": "alice", "exp": now + 3600, "nbf": now - 10})),
            true,
        ),
        (
            "HS384 with the right secret",
            signed(
                Algorithm::HS384,
                TOKEN_SECRET,
                json!({"sub": "alice", "exp": now + 3600}),
            ),
            false,
        ),
        (
            "HS512 with the right secret",
            signed(
                Algorithm::HS512,
                TOKEN_SECRET,
                json!({"sub": "alice", "exp": now + 3600}),
            ),
            false,
        ),
        ("no sub", token_with(json!({"exp": now + 3600})), false),
        (
            "sub outside the id alphabet",
            token_with(json!({"sub": "a:b", "exp": now + 3600})),
            false,
        ),
    ];
    // Every case is checked and every wrong answer reported, not just the first.
    let mut wrong = Vec::new();
    for (i, (what, token, accepted)) in cases.into_iter().enumerate() {
        let (answer, mut c) = hello(&url, &token).await;
        if accepted {
            if (answer["type"].as_str(), answer["player"].as_str())
                != (Some("welcome"), Some("alice"))
            {
                wrong.push(format!("{what}: refused: {answer}"));
            }
        } else if !refused(&answer) {
            wrong.push(format!("{what}: accepted: {answer}"));
        } else {
            let r = c.submit(&format!("s-{i}"), "b", 1).await;
            if r["code"] != "unauthorized" {
                wrong.push(format!("{what}: not a spectator after the refusal: {r}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_eq!(
        app.get("/v1/boards/b/players/alice").await.status,
        404,
        "no refused token scored"
    );
}

/// A refused token's message says what to change: the algorithm (`none` and HS384 alike), the
/// signature, an `aud` claim, a claim that is missing or no time, an expired or not yet valid
/// token.
#[tokio::test]
async fn a_refused_tokens_message_says_why() {
    let app = spawn_app().await;
    let url = app.ws_url();
    let now = now_s();
    let exp = now + 3600;
    let cases = [
        (
            scorecast_tests::ws::none_alg_token("alice"),
            "alg none is refused: only HS256",
        ),
        (
            signed(
                Algorithm::HS384,
                TOKEN_SECRET,
                json!({"sub": "alice", "exp": exp}),
            ),
            "alg HS384 is refused: only HS256",
        ),
        (scorecast_tests::ws::foreign_token("alice"), "bad signature"),
        (
            token_with(json!({"sub": "alice", "exp": exp, "aud": "game"})),
            "an aud claim is refused",
        ),
        (
            token_with(json!({"sub": "alice", "exp": exp, "aud": 7})),
            "an aud claim is refused",
        ),
        (
            token_with(json!({"sub": "alice", "exp": exp, "nbf": "today"})),
            "nbf must be a number of seconds since the epoch",
        ),
        (
            token_with(json!({"sub": "alice", "exp": "tomorrow"})),
            "the exp claim is missing or malformed",
        ),
        (
            token_with(json!({"sub": "alice"})),
            "the exp claim is missing or malformed",
        ),
        (
            token_with(json!({"exp": exp})),
            "the sub claim is missing or malformed",
        ),
        (
            token_with(json!({"sub": "alice", "exp": now - 120})),
            "expired (exp)",
        ),
        (
            token_with(json!({"sub": "alice", "exp": exp, "nbf": now + 120})),
            "not valid yet (nbf)",
        ),
    ];
    let mut wrong = Vec::new();
    for (token, says) in cases {
        let (answer, _) = hello(&url, &token).await;
        let message = answer["message"].as_str().unwrap_or("");
        if !refused(&answer) || !message.contains(says) {
            wrong.push(format!("expected {says:?}: {answer}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A token that expires during a session: submissions are accepted until its `exp` (+ leeway),
/// then rejected `unauthorized` without changing the score; a fresh `hello` renews the session.
#[tokio::test]
async fn a_token_expiring_mid_session_stops_submissions_until_a_fresh_hello() {
    let app = spawn_app().await;
    // Unlimited, so that only the token can stop the probes.
    app.board("b", json!({"submit_limit": null})).await;
    // Valid for about 5 more seconds (25 of the 30 s leeway are used up).
    let short = token_with(json!({"sub": "alice", "exp": now_s() - 25}));
    let (answer, mut alice) = hello(&app.ws_url(), &short).await;
    assert_eq!(answer["player"], "alice", "{answer}");

    let started = Instant::now();
    let (mut acked, mut n) = (0, 0);
    let rejected = loop {
        n += 1;
        let r = alice.submit(&format!("s-{n}"), "b", 1).await;
        if r["type"] == "rejected" {
            break r;
        }
        acked += 1;
        assert!(started.elapsed() < WAIT, "the token never expired");
        // Pace the probes (a bound on how many are sent, not a synchronisation).
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(rejected["code"], "unauthorized", "{rejected}");
    assert!(acked >= 1, "the token was valid at first");
    let score = app.get("/v1/boards/b/players/alice").await;
    assert_eq!(
        score.body["score"], acked,
        "the rejected submission changed nothing"
    );

    let w = alice.hello(&app.token("alice", None)).await;
    assert_eq!(w["player"], "alice", "{w}");
    let r = alice.submit("after", "b", 1).await;
    assert_eq!(r["type"], "ack", "{r}");
    assert_eq!(r["score"], acked + 1);
}

/// `POST /admin/tokens` issues a player token that the WebSocket accepts, carrying the display
/// name into reads; bad input is refused and a missing admin token is 401.
#[tokio::test]
async fn admin_issues_player_tokens() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    let r = app
        .admin(
            Method::POST,
            "/admin/tokens",
            json!({"player": "alice", "ttl_s": 3600, "name": "Alice"}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let token = r.body["token"].as_str().expect("a token");
    let (answer, mut alice) = hello(&app.ws_url(), token).await;
    assert_eq!(answer["player"], "alice", "{answer}");
    assert_eq!(alice.submit("1", "b", 7).await["type"], "ack");
    let top = app.get("/v1/boards/b/top").await;
    assert_eq!(
        (
            top.body["entries"][0]["player"].as_str(),
            top.body["entries"][0]["name"].as_str()
        ),
        (Some("alice"), Some("Alice"))
    );
    let claims = jsonwebtoken::decode::<Value>(
        token,
        &jsonwebtoken::DecodingKey::from_secret(TOKEN_SECRET.as_bytes()),
        &jsonwebtoken::Validation::new(Algorithm::HS256),
    )
    .expect("an HS256 token signed with the configured secret")
    .claims;
    let exp = claims["exp"].as_i64().unwrap_or(0);
    assert!(
        (now_s() + 3590..=now_s() + 3610).contains(&exp),
        "exp is ttl_s from now: {claims}"
    );

    for (body, code) in [
        (json!({"player": "a b"}), "invalid_id"),
        (json!({"player": "alice", "ttl_s": 0}), "bad_request"),
        (json!({}), "bad_request"),
    ] {
        let r = app.admin(Method::POST, "/admin/tokens", body.clone()).await;
        assert_eq!((r.status.as_u16(), r.code()), (400, code), "{body}");
    }
    let r = app
        .call(
            Method::POST,
            "/admin/tokens",
            Some(json!({"player": "alice"})),
            false,
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "unauthorized"));
}

/// The Origin allow-list end to end: with `allowed_origins` set, a listed origin may open a
/// WebSocket, any other (even the server's own) is refused 403 with the `forbidden` error
/// body, and a client without an Origin passes.
#[tokio::test]
async fn the_origin_allow_list_is_enforced_with_a_403_body() {
    let app = spawn_app_with(
        |s| s.allowed_origins = vec!["https://game.example".into()],
        Clock::Redis,
    )
    .await;
    let url = app.ws_url();
    let mut ok = WsClient::try_connect(&url, Some("https://game.example"))
        .await
        .expect("a listed origin");
    assert_eq!(ok.next_json().await["type"], "welcome");
    for origin in [
        "http://evil.example".to_owned(),
        format!("http://127.0.0.1:{}", app.port),
    ] {
        match WsClient::try_connect(&url, Some(&origin)).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
                assert_eq!(res.status(), 403, "{origin}");
                let body: Value = serde_json::from_slice(res.body().as_deref().unwrap_or_default())
                    .unwrap_or(Value::Null);
                assert_eq!(body["error"]["code"], "forbidden", "{origin}: {body}");
            }
            Err(e) => panic!("{origin}: expected 403, got {e}"),
            Ok(_) => panic!("{origin} was accepted"),
        }
    }
    let mut none = WsClient::try_connect(&url, None).await.expect("no origin");
    assert_eq!(none.next_json().await["type"], "welcome");
    assert_eq!(
        app.state.hub.sessions(),
        2,
        "refused upgrades hold no session"
    );
}
