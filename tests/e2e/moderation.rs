//! Moderation: bans on one board and on every board, over HTTP and
//! WebSocket, a retried submission id of a banned player, expiry through Scorecast's own queue,
//! the audit log paged by cursor, and deleting a board down to its last key.

use redis::AsyncCommands;
use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::jobs;
use scorecast_tests::ws::WsClient;
use scorecast_tests::{players, spawn_app, spawn_app_with, NoNotify, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;

async fn ban(app: &TestApp, player: &str, body: Value) -> scorecast_tests::Resp {
    app.admin(Method::PUT, &format!("/admin/bans/{player}"), body)
        .await
}

async fn lift(app: &TestApp, path: &str) -> scorecast_tests::Resp {
    app.call(Method::DELETE, path, None, true).await
}

/// The newest entry of `player` in board m's log.
async fn last_logged(app: &TestApp, player: &str) -> Value {
    let log = app
        .call(
            Method::GET,
            &format!("/admin/boards/m/log?player={player}&limit=1"),
            None,
            true,
        )
        .await;
    log.body["entries"][0].clone()
}

async fn players_on_top(app: &TestApp, board: &str) -> Vec<(String, i64)> {
    let r = app.get(&format!("/v1/boards/{board}/top?limit=10")).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    players(&r.body)
}

async fn score_with_id(
    app: &TestApp,
    board: &str,
    player: &str,
    points: i64,
    id: &str,
) -> scorecast_tests::Resp {
    app.admin(
        Method::POST,
        &format!("/admin/boards/{board}/players/{player}/score"),
        json!({"points": points, "id": id}),
    )
    .await
}

/// A ban on one board over HTTP: the entry is hidden from reads, the player's submissions
/// (a retried id of a submission accepted before the ban included) are 403 `forbidden` and
/// change no key, the ban is listed and audited; lifting it brings the entry back, and the
/// retried id then answers its first result again.
#[tokio::test]
async fn a_board_ban_hides_refuses_and_lifts_over_http() {
    // Arrange
    let app = spawn_app().await;
    app.board("m", json!({"order": "desc", "op": "incr"})).await;
    app.score("m", "alice", 100).await;
    let first = score_with_id(&app, "m", "bob", 50, "before-ban").await;
    assert_eq!(first.status, 200);

    // Act: ban bob on m.
    let r = ban(&app, "bob", json!({"board": "m", "reason": "cheating"})).await;

    // Assert
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        (
            &r.body["player"],
            &r.body["board"],
            &r.body["reason"],
            &r.body["until_ms"]
        ),
        (&json!("bob"), &json!("m"), &json!("cheating"), &Value::Null)
    );
    assert_eq!(players_on_top(&app, "m").await, vec![("alice".into(), 100)]);
    assert_eq!(app.get("/v1/boards/m/players/bob").await.status, 404);
    let info = app.call(Method::GET, "/admin/boards/m", None, true).await;
    assert_eq!((info.status.as_u16(), &info.body["size"]), (200, &json!(1)));

    let before = app.dump().await;
    let fresh = score_with_id(&app, "m", "bob", 7, "after-ban").await;
    assert_eq!((fresh.status.as_u16(), fresh.code()), (403, "forbidden"));
    let retried = score_with_id(&app, "m", "bob", 50, "before-ban").await;
    assert_eq!(
        (retried.status.as_u16(), retried.code()),
        (403, "forbidden")
    );
    assert_eq!(
        app.dump().await,
        before,
        "a banned player's submissions change nothing"
    );

    let list = app.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(
        list.body["bans"].as_array().unwrap().len(),
        1,
        "{:?}",
        list.body
    );
    assert_eq!(list.body["bans"][0]["player"], "bob");
    let log = app
        .call(Method::GET, "/admin/boards/m/log?player=bob", None, true)
        .await;
    assert_eq!(log.body["entries"][0]["action"], "ban", "{:?}", log.body);
    assert_eq!(log.body["entries"][0]["reason"], "cheating");
    assert_eq!(
        log.body["entries"][0]["until_ms"],
        Value::Null,
        "until lifted"
    );

    // Act: lift it.
    assert_eq!(lift(&app, "/admin/bans/bob?board=m").await.status, 204);

    // Assert: bob is back with his score; the retried id answers its first result.
    assert_eq!(
        players_on_top(&app, "m").await,
        vec![("alice".into(), 100), ("bob".into(), 50)]
    );
    let retried = score_with_id(&app, "m", "bob", 50, "before-ban").await;
    assert_eq!(retried.status, 200);
    assert_eq!(
        (&retried.body["duplicate"], &retried.body["score"]),
        (&json!(true), &json!(50))
    );
    assert_eq!(last_logged(&app, "bob").await["action"], "unban");
    assert_eq!(
        lift(&app, "/admin/bans/bob?board=m").await.code(),
        "not_found"
    );
    let list = app.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(list.body["bans"], json!([]));

    // A ban given without a reason is logged with a null one, as its record has it.
    assert_eq!(ban(&app, "bob", json!({"board": "m"})).await.status, 200);
    let entry = last_logged(&app, "bob").await;
    assert_eq!(
        (&entry["action"], &entry["reason"]),
        (&json!("ban"), &Value::Null),
        "{entry}"
    );
}

/// Over WebSocket: a watching `top` view loses the banned player's row at once, their
/// submissions are `rejected` `forbidden` (a retried id too), and the row comes back on lift.
#[tokio::test]
async fn a_banned_player_is_rejected_and_hidden_over_websocket() {
    // Arrange: carol scores over a WebSocket; a viewer watches top.
    let app = spawn_app().await;
    app.board("w", json!({"order": "desc", "op": "best"})).await;
    app.score("w", "dave", 10).await;
    let mut carol = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        carol.hello(&app.token("carol", None)).await["type"],
        "welcome"
    );
    assert_eq!(carol.submit("c-1", "w", 30).await["type"], "ack");
    let mut viewer = WsClient::connect(&app.ws_url()).await;
    let snap = viewer.subscribe("w", "top", json!({"limit": 10})).await;
    assert_eq!(snap["entries"][0]["player"], "carol", "{snap:?}");

    // Act
    assert_eq!(ban(&app, "carol", json!({"board": "w"})).await.status, 200);

    // Assert: the view drops carol; her submissions are refused.
    let push = viewer
        .recv_until(scorecast_tests::ws::WAIT, |v| {
            v["type"] == "top" && v["entries"].as_array().is_some_and(|e| e.len() == 1)
        })
        .await;
    assert_eq!(push["entries"][0]["player"], "dave");
    let r = carol.submit("c-2", "w", 99).await;
    assert_eq!(
        (&r["type"], &r["code"]),
        (&json!("rejected"), &json!("forbidden")),
        "{r:?}"
    );
    let r = carol.submit("c-1", "w", 30).await;
    assert_eq!(
        (&r["type"], &r["code"]),
        (&json!("rejected"), &json!("forbidden")),
        "{r:?}"
    );

    // Act: lift; Assert: carol's row is back, with her score from before the ban.
    assert_eq!(lift(&app, "/admin/bans/carol").await.status, 204);
    let push = viewer
        .recv_until(scorecast_tests::ws::WAIT, |v| {
            v["type"] == "top" && v["entries"].as_array().is_some_and(|e| e.len() == 2)
        })
        .await;
    assert_eq!(
        (&push["entries"][0]["player"], &push["entries"][0]["score"]),
        (&json!("carol"), &json!(30))
    );
    assert_eq!(carol.submit("c-3", "w", 40).await["type"], "ack");
}

/// A ban without a board covers every board, those created afterwards too; lifting it (no
/// `?board=`) frees the player everywhere.
#[tokio::test]
async fn a_ban_on_every_board_reaches_boards_created_later() {
    let app = spawn_app().await;
    app.board("a1", json!({})).await;
    app.score("a1", "eve", 5).await;
    assert_eq!(
        ban(&app, "eve", json!({"reason": "spam"})).await.status,
        200
    );
    app.board("a2", json!({})).await;

    for b in ["a1", "a2"] {
        let r = score_with_id(&app, b, "eve", 1, "x").await;
        assert_eq!(r.code(), "forbidden", "{b}");
    }
    assert_eq!(players_on_top(&app, "a1").await, vec![]);
    let list = app.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(
        list.body["bans"].as_array().unwrap().len(),
        1,
        "{:?}",
        list.body
    );
    assert_eq!(list.body["bans"][0]["board"], Value::Null);

    assert_eq!(lift(&app, "/admin/bans/eve").await.status, 204);
    assert_eq!(players_on_top(&app, "a1").await, vec![("eve".into(), 5)]);
    assert_eq!(score_with_id(&app, "a2", "eve", 1, "y").await.status, 200);
}

/// Runs the job that is due and checks it was a `ban.lift` that succeeded.
async fn run_due_ban_lift(app: &TestApp) {
    let (job, ok) = jobs::run_next(&app.state, &NoNotify)
        .await
        .unwrap()
        .expect("a due job");
    assert_eq!((job.kind.as_str(), ok), ("ban.lift", true));
}

/// A ban with `until_ms` lifts itself: the `ban.lift` job in Scorecast's queue is due at that
/// time, not before, and puts the entry back; a ban renewed meanwhile is not lifted by the old
/// job.
#[tokio::test]
async fn a_ban_expires_through_the_job_queue() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("e", json!({})).await;
    app.score("e", "finn", 3).await;
    let r = ban(&app, "finn", json!({"board": "e", "until_ms": T0 + 60_000})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(
        jobs::run_next(&app.state, &NoNotify)
            .await
            .unwrap()
            .is_none(),
        "not due yet"
    );
    assert_eq!(players_on_top(&app, "e").await, vec![]);

    app.clock.set(T0 + 60_000);
    run_due_ban_lift(&app).await;
    assert_eq!(players_on_top(&app, "e").await, vec![("finn".into(), 3)]);
    assert_eq!(score_with_id(&app, "e", "finn", 1, "z").await.status, 200);

    // Renewed: the first job (until T0+120s) must not lift the ban that lasts until T0+600s.
    ban(
        &app,
        "finn",
        json!({"board": "e", "until_ms": T0 + 120_000}),
    )
    .await;
    ban(
        &app,
        "finn",
        json!({"board": "e", "until_ms": T0 + 600_000}),
    )
    .await;
    app.clock.set(T0 + 120_000);
    run_due_ban_lift(&app).await;
    assert_eq!(
        score_with_id(&app, "e", "finn", 1, "w").await.code(),
        "forbidden"
    );
}

/// A board's own ban and a ban on every board are two layers: either one lifted or expired
/// leaves the player banned by the other, and the held entries come back only once neither is
/// left.
#[tokio::test]
async fn a_board_ban_and_a_ban_on_every_board_do_not_lift_each_other() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("l1", json!({})).await;
    app.board("l2", json!({})).await;
    app.score("l1", "gus", 7).await;
    app.score("l2", "gus", 9).await;
    let r = ban(&app, "gus", json!({"reason": "cheat"})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = ban(&app, "gus", json!({"board": "l1", "until_ms": T0 + 60_000})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let list = app.call(Method::GET, "/admin/bans", None, true).await;
    let boards: Vec<&Value> = list.body["bans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["board"])
        .collect();
    assert_eq!(boards, [&Value::Null, &json!("l1")], "{:?}", list.body);

    // l1's own ban expires: the ban on every board still holds there.
    app.clock.set(T0 + 60_000);
    run_due_ban_lift(&app).await;
    assert_eq!(
        score_with_id(&app, "l1", "gus", 1, "a").await.code(),
        "forbidden"
    );
    assert_eq!(players_on_top(&app, "l1").await, vec![]);
    // `?board=` lifts a board's own ban only, and says why there is none to lift.
    let r = lift(&app, "/admin/bans/gus?board=l1").await;
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("every board")),
        "{:?}",
        r.body
    );
    assert_eq!(
        score_with_id(&app, "l1", "gus", 1, "b").await.code(),
        "forbidden"
    );

    // The other way round: l1's own ban (no end) outlives the ban on every board, renewed to
    // end at T0 + 120 s.
    ban(&app, "gus", json!({"board": "l1"})).await;
    ban(&app, "gus", json!({"until_ms": T0 + 120_000})).await;
    app.clock.set(T0 + 120_000);
    run_due_ban_lift(&app).await;
    assert_eq!(players_on_top(&app, "l2").await, vec![("gus".into(), 9)]);
    assert_eq!(score_with_id(&app, "l2", "gus", 1, "c").await.status, 200);
    assert_eq!(
        score_with_id(&app, "l1", "gus", 1, "d").await.code(),
        "forbidden"
    );
    assert_eq!(players_on_top(&app, "l1").await, vec![]);

    // Lifting every ban of the player (no `?board=`) frees them on l1 as well.
    assert_eq!(lift(&app, "/admin/bans/gus").await.status, 204);
    assert_eq!(players_on_top(&app, "l1").await, vec![("gus".into(), 7)]);
    assert_eq!(score_with_id(&app, "l1", "gus", 1, "e").await.status, 200);
}

/// Bad moderation input gets its error and changes nothing.
#[tokio::test]
async fn bad_ban_requests_change_nothing() {
    let app = spawn_app().await;
    app.board("bad", json!({})).await;
    let before = app.dump().await;
    let cases = [
        (
            "gil",
            json!({"board": "bad", "until_ms": 1}),
            400,
            "bad_request",
        ),
        ("gil", json!({"board": "nope"}), 404, "unknown_board"),
        (
            "gil",
            json!({"board": "bad", "reason": "x".repeat(201)}),
            400,
            "bad_request",
        ),
        (
            "gil",
            json!({"board": "bad", "extra": 1}),
            400,
            "bad_request",
        ),
        ("bad%20id", json!({"board": "bad"}), 400, "invalid_id"),
    ];
    for (player, body, status, code) in cases {
        let r = ban(&app, player, body.clone()).await;
        assert_eq!((r.status.as_u16(), r.code()), (status, code), "{body}");
    }
    assert_eq!(lift(&app, "/admin/bans/gil").await.code(), "not_found");
    let unauth = app.call(Method::GET, "/admin/bans", None, false).await;
    assert_eq!(unauth.status, 401);
    assert_eq!(app.dump().await, before);
}

/// `DELETE /admin/boards/{b}` leaves no key of the board (scores, seasons, names, log,
/// limiter state, dedup records, bans, holds), its reads are 404, and other boards are intact.
#[tokio::test]
async fn deleting_a_board_leaves_no_key_of_it() {
    // Arrange: a board with every kind of key, and a neighbour.
    let app = spawn_app().await;
    app.board(
        "gone",
        json!({"submit_limit": {"limit": 100, "window_ms": 60000}}),
    )
    .await;
    app.board("kept", json!({})).await;
    app.score("kept", "hal", 1).await;
    let mut ivy = WsClient::connect(&app.ws_url()).await;
    ivy.hello(&app.token("ivy", Some("Ivy"))).await;
    assert_eq!(ivy.submit("i-1", "gone", 4).await["type"], "ack");
    app.score("gone", "jan", 9).await;
    app.rollover("gone", "s2").await;
    app.score("gone", "jan", 2).await;
    ban(&app, "jan", json!({"board": "gone"})).await;
    let mut c = app.redis_conn().await;
    let keys: Vec<String> = c.keys("lb:{gone}:*").await.unwrap();
    assert!(keys.len() >= 8, "{keys:?}");

    // Act
    let r = app.delete_board("gone").await;

    // Assert
    assert_eq!(r.status, 204, "{:?}", r.body);
    let keys: Vec<String> = c.keys("*{gone}*").await.unwrap();
    assert_eq!(keys, Vec::<String>::new());
    let in_index: bool = c.sismember("sc:boards", "gone").await.unwrap();
    assert!(!in_index);
    assert_eq!(app.get("/v1/boards/gone/top").await.status, 404);
    let info = app
        .call(Method::GET, "/admin/boards/gone", None, true)
        .await;
    assert_eq!(info.status, 404);
    assert_eq!(app.delete_board("gone").await.status, 404);
    assert_eq!(players_on_top(&app, "kept").await, vec![("hal".into(), 1)]);
}

/// The audit log filters by player and time and pages by cursor, newest first, every entry
/// exactly once.
#[tokio::test]
async fn the_audit_log_pages_by_cursor() {
    let app = spawn_app_with(|_| {}, Clock::manual(T0)).await;
    app.board("l", json!({"op": "incr"})).await;
    for i in 0..7 {
        app.clock.set(T0 + i * 1000);
        app.score("l", if i % 2 == 0 { "kim" } else { "lea" }, i + 1)
            .await;
    }
    // kim scored at i = 0, 2, 4, 6 (points 1, 3, 5, 7).
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let q = cursor
            .as_ref()
            .map_or(String::new(), |c| format!("&cursor={c}"));
        let r = app
            .call(
                Method::GET,
                &format!("/admin/boards/l/log?player=kim&limit=3{q}"),
                None,
                true,
            )
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        for e in r.body["entries"].as_array().unwrap() {
            assert_eq!(e["player"], "kim");
            seen.push(e["points"].as_i64().unwrap());
        }
        cursor = r.body["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, vec![7, 5, 3, 1]);

    let r = app
        .call(
            Method::GET,
            &format!("/admin/boards/l/log?since_ms={}", T0 + 4000),
            None,
            true,
        )
        .await;
    let times: Vec<i64> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["time_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(times, vec![T0 + 6000, T0 + 5000, T0 + 4000]);
    let bad = app
        .call(Method::GET, "/admin/boards/l/log?cursor=zzz", None, true)
        .await;
    assert_eq!(bad.code(), "bad_request");
    let bad = app
        .call(Method::GET, "/admin/boards/l/log?limit=0", None, true)
        .await;
    assert_eq!(bad.code(), "bad_request");
}

/// The moderation endpoints are in the OpenAPI document, behind the admin scheme.
#[tokio::test]
async fn moderation_is_in_the_openapi_document() {
    let app = spawn_app().await;
    let api = app.get("/openapi.json").await.body;
    for (path, method) in [
        ("/admin/bans/{player}", "put"),
        ("/admin/bans/{player}", "delete"),
        ("/admin/bans", "get"),
        ("/admin/boards/{board}", "get"),
        ("/admin/boards/{board}", "delete"),
        ("/admin/boards/{board}/log", "get"),
    ] {
        let op = &api["paths"][path][method];
        assert_eq!(op["security"][0]["admin"], json!([]), "{method} {path}");
    }
    let log_params: Vec<&str> = api["paths"]["/admin/boards/{board}/log"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in ["player", "since_ms", "limit", "cursor"] {
        assert!(log_params.contains(&p), "{log_params:?}");
    }
}

/// `GET /admin/queues` lists every queue with its counts (the console's queue list); `/admin`
/// serves the console page.
#[tokio::test]
async fn the_console_page_and_its_queue_list() {
    let app = spawn_app().await;
    let empty = app.call(Method::GET, "/admin/queues", None, true).await;
    assert_eq!(empty.body, json!({"queues": []}));
    app.admin(
        Method::POST,
        "/admin/queues/mail/jobs",
        json!({"kind": "email"}),
    )
    .await;
    let r = app.call(Method::GET, "/admin/queues", None, true).await;
    assert_eq!(
        r.body,
        json!({"queues": [{"name": "mail", "ready": 1, "delayed": 0, "processing": 0, "dead": 0}]})
    );
    assert_eq!(
        app.call(Method::GET, "/admin/queues", None, false)
            .await
            .status,
        401
    );
    let page = app.http.get(app.url("/admin")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("/app/admin.js"));
}
