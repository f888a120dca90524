//! The machine-readable API documents against the real server: what `/openapi.json` says about
//! errors is what the server answers.

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::http::asyncapi::messages_of;
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

/// Checks `v` against a JSON Schema of the AsyncAPI document, as far as its payloads use the
/// language: `$ref`, `type` (one or a list), `const`, `enum`, `minimum`, `maximum`,
/// `minLength`, `maxLength`, `required`, `properties` (no undocumented property), `items`.
fn conforms(doc: &Value, schema: &Value, v: &Value, at: &str) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap();
        return conforms(doc, &doc["components"]["schemas"][name], v, at);
    }
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match &schema["type"] {
        Value::String(t) => assert_eq!(t, kind, "{at}: {v}"),
        Value::Array(ts) => assert!(ts.contains(&json!(kind)), "{at}: {kind} not in {ts:?}"),
        _ => {}
    }
    if let Some(c) = schema.get("const") {
        assert_eq!(c, v, "{at}");
    }
    if let Some(e) = schema["enum"].as_array() {
        assert!(e.contains(v), "{at}: {v} not in {e:?}");
    }
    if let (Some(n), Some(min)) = (v.as_f64(), schema["minimum"].as_f64()) {
        assert!(n >= min, "{at}: {n} < {min}");
    }
    if let (Some(n), Some(max)) = (v.as_f64(), schema["maximum"].as_f64()) {
        assert!(n <= max, "{at}: {n} > {max}");
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        assert!(
            len >= schema["minLength"].as_u64().unwrap_or(0),
            "{at}: too short"
        );
        assert!(
            len <= schema["maxLength"].as_u64().unwrap_or(u64::MAX),
            "{at}: too long"
        );
    }
    if let Some(obj) = v.as_object() {
        let props = schema["properties"].as_object();
        for key in schema["required"].as_array().into_iter().flatten() {
            assert!(
                obj.contains_key(key.as_str().unwrap()),
                "{at}: no `{key}` in {v}"
            );
        }
        if let Some(props) = props {
            for (k, val) in obj {
                let s = props
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}: `{k}` is not documented ({v})"));
                conforms(doc, s, val, &format!("{at}.{k}"));
            }
        }
    }
    if let Some(items) = v.as_array() {
        for (i, item) in items.iter().enumerate() {
            conforms(doc, &schema["items"], item, &format!("{at}[{i}]"));
        }
    }
}

/// A real session, every client message sent and most server messages provoked (welcome, ack,
/// rejected, the three views, run, pong, error): each frame the server sent is a message
/// `/asyncapi.json` says the server sends, and conforms to its payload schema; so does each
/// frame the client sent, as a message the server receives.
#[tokio::test]
async fn a_real_session_speaks_the_documented_messages() {
    let app = scorecast_tests::spawn_app().await;
    let doc = app.get("/asyncapi.json").await.body;
    let (sent_by_server, received_by_server) =
        (messages_of(&doc, "send"), messages_of(&doc, "receive"));
    app.board("b", json!({})).await;
    app.board("v", json!({"op": "best", "validator": "2048"}))
        .await;
    app.score("b", "bob", 7).await;

    // `try_connect` leaves the spectator `welcome` unread, so it is checked too.
    let mut ws = scorecast_tests::ws::WsClient::try_connect(&app.ws_url(), None)
        .await
        .expect("websocket upgrade");
    let token = app.token("ann", Some("Ann"));
    let mut seen = vec![ws.next_json().await];
    let sent = vec![
        json!({"type": "hello", "token": token}),
        json!({"type": "subscribe", "board": "b", "view": "top", "limit": 5}),
        json!({"type": "subscribe", "board": "b", "view": "me"}),
        json!({"type": "subscribe", "board": "b", "view": "around", "radius": 2}),
        json!({"type": "submit", "id": "c-1", "board": "b", "points": 3}),
        json!({"type": "submit", "id": "c-2", "board": "b", "points": 1.5}),
        json!({"type": "ping"}),
        json!({"type": "fly"}),
    ];
    for msg in &sent {
        ws.send_json(msg.clone()).await;
    }
    // Everything answered: the last two frames are answered in order (pong, then error).
    let mut want: Vec<&str> = vec![
        "welcome", "top", "rank", "around", "ack", "rejected", "pong", "error",
    ];
    while !want.is_empty() {
        let m = match ws.next_within(std::time::Duration::from_secs(10)).await {
            Some(scorecast_tests::ws::Incoming::Json(m)) => m,
            other => panic!("still waiting for {want:?}, got {other:?} after {seen:?}"),
        };
        want.retain(|t| m["type"] != *t);
        seen.push(m);
    }

    // `unsubscribe` has no answer; the `pong` to the ping after it shows it was read.
    let unsubscribe = json!({"type": "unsubscribe", "board": "b", "view": "around"});
    ws.send_json(unsubscribe.clone()).await;
    ws.send_json(json!({"type": "ping"})).await;
    seen.push(ws.recv_type("pong").await);
    // A run on a verified board, and its (empty) proof: answered `run`, then `ack`.
    let start_run = json!({"type": "start_run", "id": "r-1", "board": "v"});
    ws.send_json(start_run.clone()).await;
    let run = ws.recv_type("run").await;
    let proof = json!({"type": "proof", "id": "p-1", "board": "v", "run": run["run"], "proof": ""});
    ws.send_json(proof.clone()).await;
    let ack = ws.answer_to("p-1").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    seen.extend([run, ack]);
    let sent = [sent, vec![unsubscribe, start_run, proof]].concat();

    for m in &seen {
        let ty = m["type"].as_str().unwrap();
        assert!(
            sent_by_server.contains(ty),
            "`{ty}` is not documented as sent"
        );
        conforms(&doc, &doc["components"]["messages"][ty]["payload"], m, ty);
    }
    for m in sent
        .iter()
        .filter(|m| m["type"] != "fly" && m["id"] != "c-2")
    {
        let ty = m["type"].as_str().unwrap();
        assert!(
            received_by_server.contains(ty),
            "`{ty}` is not documented as received"
        );
        conforms(&doc, &doc["components"]["messages"][ty]["payload"], m, ty);
    }
}
