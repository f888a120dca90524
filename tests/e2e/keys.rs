//! Scoped keys from outside: the admin token and named keys of scope `admin`, `game_server` and
//! `read`, each refused outside its scope; token secrets rotated with two accepted at once; the
//! audit log naming the key behind each admin action.

use std::collections::BTreeMap;

use reqwest::Method;
use scorecast_tests::scorecast_server::auth::{Scope, Secret, Tokens};
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_server::config::{KeySettings, Settings};
use scorecast_tests::ws::WsClient;
use scorecast_tests::{id, spawn_app_with, submission, Api, Resp, TestApp, ADMIN_TOKEN};
use serde_json::{json, Value};

const OPS_KEY: &str = "ops-key-0123456789abcdef0123456789abcdef";
const STUDIO_KEY: &str = "studio-key-0123456789abcdef0123456789abcdef";
const DASHBOARD_KEY: &str = "dashboard-key-0123456789abcdef0123456789abcdef";

fn with_keys(s: &mut Settings) {
    let key = |scope, secret: &str| KeySettings {
        scope,
        secret: Secret::new(secret),
    };
    s.keys = BTreeMap::from([
        ("ops".to_owned(), key(Scope::Admin, OPS_KEY)),
        ("studio".to_owned(), key(Scope::GameServer, STUDIO_KEY)),
        ("dashboard".to_owned(), key(Scope::Read, DASHBOARD_KEY)),
    ]);
}

async fn call(api: &Api, key: Option<&str>, method: &Method, path: &str, body: &Value) -> Resp {
    let body = (!body.is_null()).then_some(body);
    api.call_as(key, method.clone(), path, body).await
}

/// Every `/admin` route: its method, its path template (as the OpenAPI document names it), a
/// concrete path and body, and the narrowest scope that may call it.
fn routes() -> Vec<(Method, &'static str, &'static str, Value, Scope)> {
    use Scope::*;
    let m = |s: &str| Method::from_bytes(s.as_bytes()).unwrap();
    vec![
        (
            m("GET"),
            "/admin/boards/{board}",
            "/admin/boards/b",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/boards/{board}/log",
            "/admin/boards/b/log",
            Value::Null,
            Read,
        ),
        (m("GET"), "/admin/bans", "/admin/bans", Value::Null, Read),
        (m("GET"), "/admin/audit", "/admin/audit", Value::Null, Read),
        (
            m("GET"),
            "/admin/validators",
            "/admin/validators",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/validators/{name}",
            "/admin/validators/2048",
            Value::Null,
            Read,
        ),
        (
            m("PUT"),
            "/admin/validators/{name}",
            "/admin/validators/nope",
            Value::Null,
            Admin,
        ),
        (
            m("DELETE"),
            "/admin/validators/{name}",
            "/admin/validators/nope",
            Value::Null,
            Admin,
        ),
        (
            m("GET"),
            "/admin/queues",
            "/admin/queues",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/boards/{board}/players",
            "/admin/boards/b/players?q=bob",
            Value::Null,
            Read,
        ),
        (m("GET"), "/admin/stats", "/admin/stats", Value::Null, Read),
        (
            m("GET"),
            "/admin/boards/{board}/top",
            "/admin/boards/b/top",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/boards/{board}/buckets",
            "/admin/boards/b/buckets",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/boards/{board}/tournament/entrants",
            "/admin/boards/b/tournament/entrants",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/leagues",
            "/admin/leagues",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/leagues/{league}",
            "/admin/leagues/lg",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/leagues/{league}/moves",
            "/admin/leagues/lg/moves?season=s",
            Value::Null,
            Read,
        ),
        (
            m("PUT"),
            "/admin/leagues/{league}",
            "/admin/leagues/lg",
            json!({"tiers": ["lg-0", "lg-1"], "bucket_size": 2, "promote": 1, "relegate": 1,
                   "reset": "weekly"}),
            Admin,
        ),
        (
            m("GET"),
            "/admin/queues/{q}",
            "/admin/queues/q",
            Value::Null,
            Read,
        ),
        (
            m("GET"),
            "/admin/queues/{q}/dead",
            "/admin/queues/q/dead",
            Value::Null,
            Read,
        ),
        (
            m("POST"),
            "/admin/tokens",
            "/admin/tokens",
            json!({"player": "alice"}),
            GameServer,
        ),
        (
            m("POST"),
            "/admin/boards/{board}/players/{player}/score",
            "/admin/boards/b/players/alice/score",
            json!({"points": 5}),
            GameServer,
        ),
        (
            m("PUT"),
            "/admin/boards/{board}",
            "/admin/boards/c",
            json!({}),
            Admin,
        ),
        (
            m("POST"),
            "/admin/boards/{board}/rollover",
            "/admin/boards/b/rollover",
            json!({"season": "s2"}),
            Admin,
        ),
        (
            m("DELETE"),
            "/admin/boards/{board}/players/{player}",
            "/admin/boards/b/players/bob",
            Value::Null,
            Admin,
        ),
        (
            m("POST"),
            "/admin/players/{player}/revoke",
            "/admin/players/carol/revoke",
            Value::Null,
            Admin,
        ),
        (
            m("PUT"),
            "/admin/bans/{player}",
            "/admin/bans/mallory",
            json!({}),
            Admin,
        ),
        (
            m("DELETE"),
            "/admin/bans/{player}",
            "/admin/bans/mallory",
            Value::Null,
            Admin,
        ),
        (
            m("DELETE"),
            "/admin/boards/{board}",
            "/admin/boards/c",
            Value::Null,
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/jobs",
            "/admin/queues/q/jobs",
            json!({"kind": "k", "id": "j2"}),
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/jobs/bulk",
            "/admin/queues/q/jobs/bulk",
            json!({"jobs": [{"kind": "k", "id": "j3"}]}),
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/claim",
            "/admin/queues/q/claim",
            Value::Null,
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/jobs/{id}/extend",
            "/admin/queues/q/jobs/j1/extend",
            json!({"lease_ms": 1000}),
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/jobs/{id}/nack",
            "/admin/queues/q/jobs/j1/nack",
            json!({}),
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/jobs/{id}/ack",
            "/admin/queues/q/jobs/j1/ack",
            Value::Null,
            Admin,
        ),
        (
            m("GET"),
            "/admin/queues/{q}/jobs",
            "/admin/queues/q/jobs?state=ready",
            Value::Null,
            Read,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/dead/retry",
            "/admin/queues/q/dead/retry",
            Value::Null,
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/purge",
            "/admin/queues/q/purge?state=dead",
            Value::Null,
            Admin,
        ),
        (
            m("DELETE"),
            "/admin/queues/{q}/jobs/{id}",
            "/admin/queues/q/jobs/j1",
            Value::Null,
            Admin,
        ),
        (
            m("POST"),
            "/admin/queues/{q}/dead/{id}/retry",
            "/admin/queues/q/dead/j1/retry",
            Value::Null,
            Admin,
        ),
    ]
}

/// For every `/admin` route (the table is checked against the served OpenAPI document, so a new
/// route without a row fails) and every caller — no key, a wrong key, a `read`, a
/// `game_server` and an `admin` key, and the admin token — the route answers exactly as its
/// declared scope says: 401 `unauthorized` without a known key, 403 `forbidden` (naming the
/// key and the scope needed) for a narrower scope, with every Redis key unchanged; otherwise the
/// request reaches the handler.
#[tokio::test]
async fn every_admin_route_admits_exactly_its_scopes() {
    // No job workers: a job that an allowed call scheduled (a ban's lift, a rollover's rewards)
    // must not be claimed or acked between a refusal's before and after dumps.
    let app = spawn_app_with(
        |s| {
            with_keys(s);
            s.workers = false;
        },
        Clock::Redis,
    )
    .await;
    app.board("b", json!({})).await;
    app.score("b", "bob", 3).await;
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs",
            json!({"kind": "k", "id": "j1"}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);

    let table = routes();
    // Every /admin operation of the API is in the table.
    let doc = app.get("/openapi.json").await.body;
    let mut served: Vec<String> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if path.starts_with("/admin") {
            for method in ops.as_object().unwrap().keys() {
                served.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    served.sort();
    let mut listed: Vec<String> = table.iter().map(|(m, t, ..)| format!("{m} {t}")).collect();
    listed.sort();
    assert_eq!(listed, served, "the table lists every /admin operation");

    let callers: [(&str, Option<&str>, Option<Scope>); 6] = [
        ("no key", None, None),
        (
            "a wrong key",
            Some("not-a-key-0123456789abcdef0123456789abcdef"),
            None,
        ),
        ("dashboard (read)", Some(DASHBOARD_KEY), Some(Scope::Read)),
        (
            "studio (game_server)",
            Some(STUDIO_KEY),
            Some(Scope::GameServer),
        ),
        ("ops (admin)", Some(OPS_KEY), Some(Scope::Admin)),
        ("the admin token", Some(ADMIN_TOKEN), Some(Scope::Admin)),
    ];
    for (method, template, path, body, needed) in &table {
        // Refusals first, each proven to change nothing; then the callers that may, in order,
        // (the first of them may change state, e.g. delete what it deletes).
        for (who, key, scope) in &callers {
            let allowed = scope.is_some_and(|s| s.allows(*needed));
            if allowed {
                continue;
            }
            let before = app.dump().await;
            let r = call(&app.api, *key, method, path, body).await;
            let what = format!("{method} {template} by {who}");
            match scope {
                None => {
                    assert_eq!(
                        (r.status.as_u16(), r.code()),
                        (401, "unauthorized"),
                        "{what}"
                    )
                }
                Some(s) => {
                    assert_eq!((r.status.as_u16(), r.code()), (403, "forbidden"), "{what}");
                    let msg = r.body["error"]["message"].as_str().unwrap();
                    assert!(
                        msg.contains(s.as_str()) && msg.contains(needed.as_str()),
                        "{what}: the refusal names both scopes: {msg}"
                    );
                }
            }
            assert_eq!(app.dump().await, before, "{what} changed nothing");
        }
        for (who, key, scope) in &callers {
            if !scope.is_some_and(|s| s.allows(*needed)) {
                continue;
            }
            let r = call(&app.api, *key, method, path, body).await;
            assert!(
                ![401, 403].contains(&r.status.as_u16()),
                "{method} {template} by {who}: {} {:?}",
                r.status,
                r.body
            );
        }
    }
}

/// The `Authorization` scheme is case-insensitive: `bearer` and `BEARER` carry a key as
/// `Bearer` does; another scheme carries none (401).
#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let app = spawn_app_with(with_keys, Clock::Redis).await;
    for (header, status) in [
        (format!("Bearer {DASHBOARD_KEY}"), 200),
        (format!("bearer {DASHBOARD_KEY}"), 200),
        (format!("BEARER  {DASHBOARD_KEY}"), 200),
        (format!("Basic {DASHBOARD_KEY}"), 401),
        (DASHBOARD_KEY.to_owned(), 401),
    ] {
        let res = app
            .http
            .get(app.url("/admin/bans"))
            .header("authorization", &header)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "{header}");
    }
}

/// The game server's key does its job end to end: mints a token a player then uses on the
/// WebSocket, submits for a player, reads the board and its log; the dashboard's key reads the
/// same board.
#[tokio::test]
async fn a_game_server_key_mints_tokens_and_submits() {
    let app = spawn_app_with(with_keys, Clock::Redis).await;
    app.board("b", json!({})).await;
    let r = call(
        &app.api,
        Some(STUDIO_KEY),
        &Method::POST,
        "/admin/tokens",
        &json!({"player": "alice"}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let token = r.body["token"].as_str().unwrap().to_owned();
    let mut ws = WsClient::connect(&app.ws_url()).await;
    let hello = ws.hello(&token).await;
    assert_eq!(hello["type"], "welcome", "{hello}");
    let r = call(
        &app.api,
        Some(STUDIO_KEY),
        &Method::POST,
        "/admin/boards/b/players/alice/score",
        &json!({"points": 7}),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), &r.body["score"]),
        (200, &json!(7)),
        "{:?}",
        r.body
    );
    let r = call(
        &app.api,
        Some(DASHBOARD_KEY),
        &Method::GET,
        "/admin/boards/b",
        &Value::Null,
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), &r.body["size"]),
        (200, &json!(1)),
        "{:?}",
        r.body
    );
}

async fn log_of(app: &TestApp, board: &str) -> Vec<Value> {
    let r = app
        .call(
            Method::GET,
            &format!("/admin/boards/{board}/log"),
            None,
            true,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["entries"].as_array().unwrap().clone()
}

/// Admin actions in the audit log name the key that made them (never its secret): a score
/// submitted by the game server's key, a ban and its lift by a named admin key, a ban by the
/// admin token (`admin`); a player's own submission names none. The ban list says who placed
/// each ban.
#[tokio::test]
async fn the_audit_log_names_the_key_behind_each_admin_action() {
    let app = spawn_app_with(with_keys, Clock::Redis).await;
    app.board("b", json!({})).await;
    let as_key = |key: &'static str, method: Method, path: String, body: Value| {
        let api = &app.api;
        async move { call(api, Some(key), &method, &path, &body).await }
    };
    let r = as_key(
        STUDIO_KEY,
        Method::POST,
        "/admin/boards/b/players/alice/score".into(),
        json!({"points": 5}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    app.state
        .submit(&submission("b", "bob", "s1", 4))
        .await
        .unwrap();
    let r = as_key(
        OPS_KEY,
        Method::PUT,
        "/admin/bans/mallory".into(),
        json!({"board": "b"}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["by"], "ops", "the ban record: {:?}", r.body);
    let r = as_key(
        ADMIN_TOKEN,
        Method::PUT,
        "/admin/bans/eve".into(),
        json!({}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let bans = app.call(Method::GET, "/admin/bans", None, true).await.body;
    let by: Vec<(&str, &str)> = bans["bans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["player"].as_str().unwrap(),
                b["by"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        by.contains(&("mallory", "ops")) && by.contains(&("eve", "admin")),
        "{by:?}"
    );
    let r = as_key(
        OPS_KEY,
        Method::DELETE,
        "/admin/bans/mallory".into(),
        Value::Null,
    )
    .await;
    assert_eq!(r.status, 204, "{:?}", r.body);

    let log = log_of(&app, "b").await;
    let who = |pred: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        log.iter()
            .filter(|e| pred(e))
            .map(|e| e["by"].clone())
            .collect()
    };
    assert_eq!(
        who(&|e| e["player"] == "alice"),
        vec![json!("studio")],
        "{log:?}"
    );
    assert_eq!(
        who(&|e| e["player"] == "bob"),
        vec![Value::Null],
        "a player's own: {log:?}"
    );
    assert_eq!(
        who(&|e| e["player"] == "mallory"),
        vec![json!("ops"), json!("ops")],
        "the lift, then the ban: {log:?}"
    );
    assert_eq!(
        who(&|e| e["player"] == "eve"),
        vec![json!("admin")],
        "{log:?}"
    );
    let text = serde_json::to_string(&log).unwrap();
    for secret in [OPS_KEY, STUDIO_KEY, ADMIN_TOKEN] {
        assert!(!text.contains(secret), "no secret in the log");
    }
}

const OLD_SECRET: &str = "old-token-secret-0123456789abcdef0123456789";
const NEW_SECRET: &str = "new-token-secret-0123456789abcdef0123456789";

async fn hello_type(ws_url: &str, token: &str) -> Value {
    let mut ws = WsClient::connect(ws_url).await;
    let answer = ws.hello(token).await;
    answer["type"].clone()
}

/// A token-secret rotation: while both are configured, a token signed with the old secret is
/// accepted and the tokens the server mints are signed with the new one (they verify with the
/// new secret alone, not the old); an instance configured with the new secret only refuses the
/// old token and accepts the new.
#[tokio::test]
async fn a_rotation_accepts_the_old_secret_until_it_is_removed() {
    let rotating = |s: &mut Settings| {
        s.token_secret = Some(Secret::new(NEW_SECRET));
        s.previous_token_secret = Some(Secret::new(OLD_SECRET));
    };
    let app = spawn_app_with(rotating, Clock::Redis).await;
    let old_token = Tokens::new(&Secret::new(OLD_SECRET)).issue(&id("alice"), None, 3600);
    assert_eq!(hello_type(&app.ws_url(), &old_token).await, "welcome");
    let r = app
        .admin(Method::POST, "/admin/tokens", json!({"player": "alice"}))
        .await;
    let minted = r.body["token"].as_str().unwrap().to_owned();
    assert!(
        Tokens::new(&Secret::new(NEW_SECRET))
            .verify(&minted)
            .is_ok(),
        "signed with the new"
    );
    assert!(
        Tokens::new(&Secret::new(OLD_SECRET))
            .verify(&minted)
            .is_err(),
        "not the old"
    );

    let after = app
        .second_instance_with(|s| s.token_secret = Some(Secret::new(NEW_SECRET)))
        .await;
    let after_ws = format!("ws://127.0.0.1:{}/ws", after.port);
    assert_eq!(
        hello_type(&after_ws, &old_token).await,
        "error",
        "old secret removed"
    );
    assert_eq!(hello_type(&after_ws, &minted).await, "welcome");
}

/// Admin changes that no board's log holds are in the admin audit log (`GET /admin/audit`,
/// newest first, paged by cursor), each naming its key: a board configured by the admin token,
/// a rollover and a deletion by a named admin key, a revocation; a refused attempt by a
/// narrower key adds nothing.
#[tokio::test]
async fn the_admin_audit_log_names_the_key_of_each_change() {
    let app = spawn_app_with(with_keys, Clock::Redis).await;
    app.board("b", json!({})).await;
    let ops = |method: Method, path: &'static str, body: Value| {
        let api = &app.api;
        async move { call(api, Some(OPS_KEY), &method, path, &body).await }
    };
    let r = ops(
        Method::POST,
        "/admin/boards/b/rollover",
        json!({"season": "s2"}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = ops(Method::POST, "/admin/players/alice/revoke", Value::Null).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = call(
        &app.api,
        Some(STUDIO_KEY),
        &Method::DELETE,
        "/admin/boards/b",
        &Value::Null,
    )
    .await;
    assert_eq!(r.status, 403, "{:?}", r.body);
    let r = ops(Method::DELETE, "/admin/boards/b", Value::Null).await;
    assert_eq!(r.status, 204, "{:?}", r.body);

    let r = call(
        &app.api,
        Some(DASHBOARD_KEY),
        &Method::GET,
        "/admin/audit?limit=3",
        &Value::Null,
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut entries = r.body["entries"].as_array().unwrap().clone();
    let cursor = r.body["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let r = call(
        &app.api,
        Some(DASHBOARD_KEY),
        &Method::GET,
        &format!("/admin/audit?limit=3&cursor={cursor}"),
        &Value::Null,
    )
    .await;
    entries.extend(r.body["entries"].as_array().unwrap().iter().cloned());
    assert_eq!(r.body["next_cursor"], Value::Null, "{:?}", r.body);
    let seen: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["by"].as_str().unwrap(),
                e["board"].as_str().or(e["player"].as_str()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("board_delete", "ops", "b"),
            ("tokens_revoke", "ops", "alice"),
            ("rollover", "ops", "b"),
            ("board_put", "admin", "b"),
        ],
        "newest first, the refused delete absent: {entries:?}"
    );
    assert!(entries.iter().all(|e| e["time_ms"].is_i64()));
    assert_eq!(
        entries[3]["created"], true,
        "as the PUT answered: {entries:?}"
    );
    let r = app
        .call(Method::GET, "/admin/audit?cursor=nope", None, true)
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "bad_request"));
}
