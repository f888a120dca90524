//! The admin console's player search (`GET /admin/boards/{board}/players?q=`): a player found by
//! exact id wherever they rank, players found by a part of their display name, a bounded walk of
//! the names that resumes by cursor, and bad searches refused with nothing changed.

use reqwest::Method;
use scorecast_tests::spawn_app;
use scorecast_tests::ws::WsClient;
use serde_json::{json, Value};

/// The `player` of each entry, in order.
fn players(body: &Value) -> Vec<String> {
    body["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {body}"))
        .iter()
        .map(|e| e["player"].as_str().unwrap().to_owned())
        .collect()
}

/// Submits `points` for `player` over the WebSocket with a token carrying `name`, so that the
/// board records the display name the way games do.
async fn named_score(
    app: &scorecast_tests::TestApp,
    board: &str,
    player: &str,
    name: &str,
    points: i64,
) {
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        ws.hello(&app.token(player, Some(name))).await["type"],
        "welcome"
    );
    assert_eq!(
        ws.submit(&format!("s-{player}"), board, points).await["type"],
        "ack"
    );
}

/// A player ranked far below the top is found by exact id with rank and score; a part of a
/// display name, in any case, finds every player named so (and not the others), and a named
/// player whose score a ban holds is still found, as unscored.
#[tokio::test]
async fn finds_a_player_by_id_anywhere_and_by_part_of_a_name() {
    // Arrange: 60 players by admin score (no names), then three named players.
    let app = spawn_app().await;
    app.board("find", json!({})).await;
    for i in 0..60 {
        app.score("find", &format!("p{i:02}"), 1000 + i).await;
    }
    named_score(&app, "find", "zed-1", "Zoë Queen", 5).await;
    named_score(&app, "find", "zed-2", "queenie", 7).await;
    named_score(&app, "find", "ann", "Ann", 2000).await;

    // Act
    let by_id = app
        .call(Method::GET, "/admin/boards/find/players?q=p03", None, true)
        .await;
    let by_name = app
        .call(
            Method::GET,
            "/admin/boards/find/players?q=QUEEN",
            None,
            true,
        )
        .await;

    // Assert: p03 (1003 points) is rank 58 of 63 (ann and 56 p's above it).
    assert_eq!(by_id.status, 200, "{:?}", by_id.body);
    assert_eq!(players(&by_id.body), ["p03"]);
    assert_eq!(by_id.body["entries"][0]["rank"], 58);
    assert_eq!(by_id.body["entries"][0]["score"], 1003);
    assert_eq!(by_name.status, 200, "{:?}", by_name.body);
    assert_eq!(players(&by_name.body), ["zed-2", "zed-1"], "by rank");
    assert_eq!(by_name.body["entries"][1]["name"], "Zoë Queen");
    assert_eq!(
        by_name.body["next_cursor"],
        Value::Null,
        "a small board is walked at once"
    );
}

/// On a board with more names than one call examines, a call stops with a cursor after a
/// bounded number of HSCANs, and following the cursors finds every match exactly once.
#[tokio::test]
async fn a_name_search_is_bounded_and_resumes_by_cursor() {
    // Arrange: 12,000 names on the board (written to the names hash as submissions write them),
    // three of them scored players whose name contains "needle".
    let app = spawn_app().await;
    app.board("big", json!({})).await;
    let mut c = app.redis_conn().await;
    let mut pipe = redis::pipe();
    for i in 0..12_000 {
        pipe.hset(
            "lb:{big}:names",
            format!("filler-{i}"),
            format!("Filler {i}"),
        )
        .ignore();
    }
    let _: () = pipe.query_async(&mut c).await.unwrap();
    for p in ["n1", "n2", "n3"] {
        named_score(&app, "big", p, &format!("The Needle {p}"), 10).await;
    }
    let scans_before = app.redis_command_calls("hscan").await;

    // Act: the first call, then every further page.
    let first = app
        .call(
            Method::GET,
            "/admin/boards/big/players?q=needle",
            None,
            true,
        )
        .await;
    let scans_first = app.redis_command_calls("hscan").await - scans_before;
    let mut found = players(&first.body);
    let mut cursor = first.body["next_cursor"].as_str().map(str::to_owned);
    let mut calls = 1;
    while let Some(c) = cursor {
        calls += 1;
        assert!(calls <= 20, "the cursor must end");
        let next = app
            .call(
                Method::GET,
                &format!("/admin/boards/big/players?q=needle&cursor={c}"),
                None,
                true,
            )
            .await;
        assert_eq!(next.status, 200, "{:?}", next.body);
        found.extend(players(&next.body));
        cursor = next.body["next_cursor"].as_str().map(str::to_owned);
    }

    // Assert: 5000 names per call at 500 per HSCAN is at most 10 HSCANs (+1: the hint is loose).
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert!(first.body["next_cursor"].is_string(), "{:?}", first.body);
    assert!(scans_first <= 11, "one call ran {scans_first} HSCANs");
    assert!(
        calls >= 3,
        "12,000 names take at least 3 calls, took {calls}"
    );
    found.sort();
    assert_eq!(found, ["n1", "n2", "n3"]);
}

/// Empty, too long and bad-cursor searches are `bad_request`, an unknown board
/// `unknown_board`, no token `unauthorized`; none of them changes Redis.
#[tokio::test]
async fn bad_searches_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    app.board("find", json!({})).await;
    app.score("find", "ann", 3).await;
    let before = app.dump().await;
    let long = "x".repeat(65);
    for (path, admin, status, code) in [
        ("/admin/boards/find/players?q=", true, 400, "bad_request"),
        (
            "/admin/boards/find/players?q=%20%20",
            true,
            400,
            "bad_request",
        ),
        (
            &format!("/admin/boards/find/players?q={long}")[..],
            true,
            400,
            "bad_request",
        ),
        (
            "/admin/boards/find/players?q=ann&cursor=abc",
            true,
            400,
            "bad_request",
        ),
        ("/admin/boards/find/players", true, 400, "bad_request"),
        (
            "/admin/boards/nope/players?q=ann",
            true,
            404,
            "unknown_board",
        ),
        (
            "/admin/boards/find/players?q=ann",
            false,
            401,
            "unauthorized",
        ),
    ] {
        let r = app.call(Method::GET, path, None, admin).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{path}: {:?}",
            r.body
        );
    }
    assert_eq!(app.dump().await, before, "a refused search changed Redis");
}

/// The instances `GET /admin/stats` lists, by id.
async fn stats_instances(app: &scorecast_tests::TestApp) -> Vec<Value> {
    let r = app.call(Method::GET, "/admin/stats", None, true).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["instances"].as_array().unwrap().clone()
}

/// Polls `check` every 50 ms for up to 15 s (each instance writes every second; a loaded machine
/// gets a wide margin).
async fn within_15s<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !check().await {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Two instances on one Redis each write their counters; either one's `/admin/stats` lists
/// both (submissions by outcome, open sockets), so the console can chart the sum wherever it
/// connects. A snapshot older than 5 s is left out, and one older than a minute is deleted by
/// the next write.
#[tokio::test]
async fn stats_list_every_running_instance() {
    // Arrange: a second instance, a score and an open socket; two stamped-by-hand snapshots of
    // instances that stopped 10 s and 2 min ago.
    let app = spawn_app().await;
    let second = app.second_instance().await;
    app.board("live", json!({})).await;
    app.score("live", "ann", 5).await;
    let mut ws = WsClient::connect(&second.ws_url()).await;
    assert_eq!(ws.hello(&app.token("ben", None)).await["type"], "welcome");
    let mut c = app.redis_conn().await;
    let now: Vec<i64> = redis::cmd("TIME").query_async(&mut c).await.unwrap();
    let now_ms = now[0] * 1000 + now[1] / 1000;
    let snapshot = r#"{"submissions":{"ok":1},"ws_connections":0}"#;
    let _: () = redis::cmd("HSET")
        .arg("sc:{stats}")
        .arg("stopped-10s")
        .arg(format!("{} {snapshot}", now_ms - 10_000))
        .arg("stopped-2min")
        .arg(format!("{} {snapshot}", now_ms - 120_000))
        .query_async(&mut c)
        .await
        .unwrap();

    // Act + Assert: two fresh instances with the score and the socket counted, read through
    // the second instance's door as well.
    within_15s(
        "both instances in /admin/stats with the score and the socket",
        || async {
            let list = stats_instances(&app).await;
            list.len() == 2
                && list
                    .iter()
                    .all(|i| i["submissions"]["ok"].as_u64() >= Some(1))
                && list.iter().all(|i| i["ws_connections"].as_i64() >= Some(1))
        },
    )
    .await;
    let via_second = scorecast_tests::Api::new(second.port, std::time::Duration::from_secs(10))
        .call(Method::GET, "/admin/stats", None, true)
        .await;
    assert_eq!(via_second.body["instances"].as_array().unwrap().len(), 2);
    let ids: Vec<&str> = via_second.body["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance"].as_str().unwrap())
        .collect();
    assert!(
        !ids.contains(&"stopped-10s"),
        "a 10 s old snapshot is not fresh: {ids:?}"
    );
    within_15s("the 2 min old snapshot deleted by a write", || async {
        let mut c = app.redis_conn().await;
        let fields: Vec<String> = redis::cmd("HKEYS")
            .arg("sc:{stats}")
            .query_async(&mut c)
            .await
            .unwrap();
        !fields.iter().any(|f| f == "stopped-2min") && fields.iter().any(|f| f == "stopped-10s")
    })
    .await;
}

/// On a 3-master Redis Cluster, through two instances: the player search (its HSCAN routed to
/// the board's master) finds a named player by name and another by id, and `/admin/stats` lists
/// both instances (`sc:{stats}` is one key, one slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_stats_work_on_a_cluster() {
    use scorecast_tests::cluster::{Cluster, ClusterApp};
    let cluster = Cluster::start(3, 0).await;
    let a = ClusterApp::start(&cluster, |_| {}).await;
    let b = ClusterApp::start(&cluster, |_| {}).await;
    a.board("cl", json!({})).await;
    a.score("cl", "plain", 4).await;
    let mut ws = WsClient::connect(&b.ws_url()).await;
    assert_eq!(
        ws.hello(&b.token("nam", Some("Named One"))).await["type"],
        "welcome"
    );
    assert_eq!(ws.submit("c-1", "cl", 9).await["type"], "ack");

    let by_name = a
        .call(Method::GET, "/admin/boards/cl/players?q=named", None, true)
        .await;
    let by_id = b
        .call(Method::GET, "/admin/boards/cl/players?q=plain", None, true)
        .await;

    assert_eq!(by_name.status, 200, "{:?}", by_name.body);
    assert_eq!(players(&by_name.body), ["nam"]);
    assert_eq!(players(&by_id.body), ["plain"]);
    assert_eq!(by_id.body["entries"][0]["rank"], 2);
    within_15s("both instances in /admin/stats on the cluster", || async {
        let r = b.call(Method::GET, "/admin/stats", None, true).await;
        r.status == 200 && r.body["instances"].as_array().map(Vec::len) == Some(2)
    })
    .await;
}
