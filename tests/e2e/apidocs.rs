//! The machine-readable API documents against the real server: what `/openapi.json` says about
//! errors is what the server answers.

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_tests::{spawn_app_with, Resp, TestApp};
use serde_json::{json, Value};

/// Asserts that `r` (an answer of `method template`) is a documented error response: its status
/// is listed for that operation, and its body has the documented shape with a `code` from the
/// enum the document gives for that status.
fn assert_documented(api: &Value, method: &str, template: &str, r: &Resp, want_code: &str) {
    let status = r.status.as_u16().to_string();
    let op = &api["paths"][template][method];
    assert!(op.is_object(), "{method} {template} is not in the document");
    let response = &op["responses"][&status];
    assert!(
        response.is_object(),
        "{method} {template} answered {status}, not documented: {}",
        r.body
    );
    let schema = response["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{method} {template} {status} has no body schema"));
    let name = schema.rsplit('/').next().unwrap();
    let error = &api["components"]["schemas"][name]["properties"]["error"];
    let codes = error["properties"]["code"]["enum"].as_array().unwrap();
    assert_eq!(r.code(), want_code, "{method} {template}: {}", r.body);
    assert!(
        codes.contains(&json!(r.code())),
        "{method} {template} {status}: `{}` is not among the documented {codes:?}",
        r.code()
    );
    assert!(r.body["error"]["message"].is_string(), "{}", r.body);
    assert_eq!(
        r.body["error"].as_object().unwrap().len(),
        2,
        "only code and message"
    );
}

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>, admin: bool) -> Resp {
    app.call(method, path, body, admin).await
}

/// Real refusals of every documented kind — bad id, out-of-range query, unknown board, missing
/// player, no token, points out of range, oversize body and head, duplicate job, rate limit,
/// Redis down — come back with a status `/openapi.json` lists for that operation and a `code`
/// from its enum for that status; the refused writes changed nothing.
#[tokio::test]
async fn the_servers_errors_are_the_documented_ones() {
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 12;
            s.public_limit.window_ms = 60_000;
        },
        Clock::Redis,
    )
    .await;
    let api = app.get("/openapi.json").await.body;
    app.board("b", json!({})).await;
    app.score("b", "ann", 5).await;
    let job = json!({"id": "j1", "kind": "email"});
    let r = call(
        &app,
        Method::POST,
        "/admin/queues/q/jobs",
        Some(job.clone()),
        true,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let before = app.dump().await;

    let big = json!({"name": "x".repeat(scorecast_server::http::MAX_BODY)});
    // (method, path, the document's path, body, with the admin token, expected code)
    type Case<'a> = (Method, &'a str, &'a str, Option<Value>, bool, &'a str);
    let cases: Vec<Case> = vec![
        (
            Method::GET,
            "/v1/boards/a:b/top",
            "/v1/boards/{board}/top",
            None,
            false,
            "invalid_id",
        ),
        (
            Method::GET,
            "/v1/boards/b/top?limit=101",
            "/v1/boards/{board}/top",
            None,
            false,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/boards/nope/top",
            "/v1/boards/{board}/top",
            None,
            false,
            "unknown_board",
        ),
        (
            Method::GET,
            "/v1/boards/b/players/nobody",
            "/v1/boards/{board}/players/{player}",
            None,
            false,
            "not_found",
        ),
        (
            Method::POST,
            "/admin/boards/b/players/ann/score",
            "/admin/boards/{board}/players/{player}/score",
            Some(json!({"points": 1})),
            false,
            "unauthorized",
        ),
        (
            Method::POST,
            "/admin/boards/b/players/ann/score",
            "/admin/boards/{board}/players/{player}/score",
            Some(json!({"points": 9_007_199_254_740_992_u64})),
            true,
            "points_out_of_range",
        ),
        (
            Method::POST,
            "/admin/boards/nope/players/ann/score",
            "/admin/boards/{board}/players/{player}/score",
            Some(json!({"points": 1})),
            true,
            "unknown_board",
        ),
        (
            Method::POST,
            "/admin/tokens",
            "/admin/tokens",
            Some(big),
            true,
            "payload_too_large",
        ),
        (
            Method::POST,
            "/admin/queues/q/jobs",
            "/admin/queues/{q}/jobs",
            Some(job),
            true,
            "conflict",
        ),
        (
            Method::GET,
            "/admin/boards/b/log?limit=1001",
            "/admin/boards/{board}/log",
            None,
            true,
            "bad_request",
        ),
    ];
    for (method, path, template, body, admin, code) in cases {
        let m = method.as_str().to_lowercase();
        let r = call(&app, method, path, body, admin).await;
        assert_documented(&api, &m, template, &r, code);
    }

    // A request head above the limit, on an endpoint that takes no input at all.
    let head = app
        .http
        .get(app.url("/healthz"))
        .header("x-filler", "x".repeat(scorecast_server::http::MAX_HEAD))
        .send()
        .await
        .unwrap();
    let r = Resp {
        status: head.status(),
        headers: head.headers().clone(),
        body: head.json().await.unwrap_or(Value::Null),
    };
    assert_documented(&api, "get", "/healthz", &r, "payload_too_large");

    // Public reads until the per-address limit refuses one (12 per minute; bounded).
    let mut limited = None;
    for _ in 0..20 {
        let r = app.get("/v1/boards").await;
        if r.status == 429 {
            limited = Some(r);
            break;
        }
    }
    let r = limited.expect("no 429 within 20 reads at a limit of 12");
    assert_documented(&api, "get", "/v1/boards", &r, "rate_limited");
    let documented = &api["paths"]["/v1/boards"]["get"]["responses"]["429"]["headers"];
    for h in [
        "Retry-After",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
    ] {
        assert!(documented[h].is_object(), "{h} is not documented");
        assert!(r.headers.contains_key(h), "{h} is not sent");
    }

    assert_eq!(app.dump().await, before, "a refused request changed Redis");

    // Redis gone: the documented 503.
    let mut app = app;
    app.redis.kill();
    let r = call(
        &app,
        Method::DELETE,
        "/admin/boards/b/players/ann",
        None,
        true,
    )
    .await;
    assert_documented(
        &api,
        "delete",
        "/admin/boards/{board}/players/{player}",
        &r,
        "unavailable",
    );
}
