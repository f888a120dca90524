//! Moderation that keeps its word: a refused ban writes nothing, moderation history outlives the
//! submission traffic that trims the log, an admin can remove a banned player's held entry, and
//! a ban or lift on every board converges on every board after the instance is killed in the
//! middle of it (the real binary, SIGKILL, restart).

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::AsyncCommands;
use reqwest::Method;
use scorecast_tests::process::ServerProcess;
use scorecast_tests::{
    spawn_app, start_test_redis, submission, temp_dir, NoNotify, TestApp, ADMIN_TOKEN, TOKEN_SECRET,
};
use serde_json::{json, Value};

async fn ban(app: &TestApp, player: &str, body: Value) -> scorecast_tests::Resp {
    app.admin(Method::PUT, &format!("/admin/bans/{player}"), body)
        .await
}

/// The 366 days a ban may last at most, in ms (the furthest a `ban.lift` job can be scheduled).
const MAX_AHEAD_MS: i64 = 366 * 86_400_000;

/// A ban refused for its `until_ms` (more than 366 days ahead, `2^63 − 1`, in the past), on one
/// board or on every board, answers 400 and leaves every key as it was; the player is not banned
/// and can still submit. A ban at the bound is accepted.
#[tokio::test]
async fn a_refused_ban_writes_nothing_and_the_player_can_still_submit() {
    let app = spawn_app().await;
    app.board("rb", json!({})).await;
    app.score("rb", "kim", 1).await;
    let now = app.state.store.clock().now_ms();
    let before = app.dump().await;
    for until in [now + MAX_AHEAD_MS + 60_000, i64::MAX, now - 1] {
        for body in [
            json!({"board": "rb", "reason": "r", "until_ms": until}),
            json!({"reason": "r", "until_ms": until}),
        ] {
            let r = ban(&app, "kim", body.clone()).await;
            assert_eq!(
                (r.status.as_u16(), r.code()),
                (400, "bad_request"),
                "{body}: {:?}",
                r.body
            );
        }
    }
    assert_eq!(app.dump().await, before, "a refused ban changed a key");
    let list = app.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(list.body["bans"], json!([]));
    assert_eq!(app.score("rb", "kim", 2).await["score"], 3);

    // At the bound (a minute inside it, for the time the request takes): accepted, enforced.
    let r = ban(
        &app,
        "kim",
        json!({"board": "rb", "until_ms": now + MAX_AHEAD_MS - 60_000}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let refused = app
        .admin(
            Method::POST,
            "/admin/boards/rb/players/kim/score",
            json!({"points": 1}),
        )
        .await;
    assert_eq!(refused.code(), "forbidden");
}

/// Stream entries of `key` whose `action` field is `action`.
async fn entries_with_action(app: &TestApp, key: &str, action: &str) -> usize {
    let r: redis::streams::StreamRangeReply = app.redis_conn().await.xrange_all(key).await.unwrap();
    r.ids
        .iter()
        .filter(|e| e.get::<String>("action").as_deref() == Some(action))
        .count()
}

/// A ban, then 1 500 submission batches of other players: the board's log has dropped the ban
/// entry (the traffic trimmed it), yet the player's history (`GET /admin/boards/{b}/log?player=`)
/// still shows the ban with its reason and the admin's score change before it, both from the
/// moderation history, and pages on to them by cursor.
#[tokio::test]
async fn moderation_history_outlives_the_submission_traffic() {
    const BATCHES: usize = 1_500;
    let app = spawn_app().await;
    app.board("mh", json!({"submit_limit": null})).await;
    app.score("mh", "lou", 7).await;
    let r = ban(
        &app,
        "lou",
        json!({"board": "mh", "reason": "aimbot, twice"}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // One batch each: every submission awaited before the next.
    for i in 0..BATCHES {
        let s = submission("mh", &format!("p{}", i % 50), &format!("s{i}"), 1);
        app.state.submit(&s).await.unwrap();
    }
    assert_eq!(
        entries_with_action(&app, "lb:{mh}:log", "ban").await,
        0,
        "the traffic should have trimmed the ban out of the log"
    );

    let page = app
        .call(
            Method::GET,
            "/admin/boards/mh/log?player=lou&limit=10",
            None,
            true,
        )
        .await;
    assert_eq!(page.status, 200, "{:?}", page.body);
    let actions: Vec<(&str, &str)> = page.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or("submit"),
                e["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![("ban", "aimbot, twice"), ("submit", "")],
        "{:?}",
        page.body
    );

    // By cursor, one entry a page: the same two, then no more.
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let q = cursor
            .as_ref()
            .map(|c| format!("&cursor={c}"))
            .unwrap_or_default();
        let p = app
            .call(
                Method::GET,
                &format!("/admin/boards/mh/log?player=lou&limit=1{q}"),
                None,
                true,
            )
            .await;
        assert_eq!(p.status, 200, "{:?}", p.body);
        for e in p.body["entries"].as_array().unwrap() {
            seen.push(e["action"].as_str().unwrap_or("submit").to_owned());
        }
        cursor = p.body["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, vec!["ban", "submit"]);
}

/// An admin removes a banned player's held entry of the current season (204): after the lift it
/// does not come back; the removal is in the player's history. With no entry, on the board or
/// held, it is 404 and changes nothing.
#[tokio::test]
async fn an_admin_removes_a_banned_players_held_entry() {
    let app = spawn_app().await;
    app.board("hr", json!({})).await;
    app.score("hr", "max", 40).await;
    app.score("hr", "ned", 5).await;
    assert_eq!(
        ban(&app, "max", json!({"board": "hr", "reason": "cheat"}))
            .await
            .status,
        200
    );

    let r = app
        .call(Method::DELETE, "/admin/boards/hr/players/max", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let before = app.dump().await;
    let again = app
        .call(Method::DELETE, "/admin/boards/hr/players/max", None, true)
        .await;
    assert_eq!(again.code(), "not_found");
    assert_eq!(app.dump().await, before, "a refused removal changed a key");

    let lifted = app
        .call(Method::DELETE, "/admin/bans/max?board=hr", None, true)
        .await;
    assert_eq!(lifted.status, 204);
    let max = app.get("/v1/boards/hr/players/max").await;
    assert_eq!(
        max.status, 404,
        "the removed entry came back: {:?}",
        max.body
    );
    let top = app.get("/v1/boards/hr/top").await;
    assert_eq!(top.body["entries"].as_array().unwrap().len(), 1);

    let log = app
        .call(Method::GET, "/admin/boards/hr/log?player=max", None, true)
        .await;
    let actions: Vec<&str> = log.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap_or("submit"))
        .collect();
    assert_eq!(actions, vec!["unban", "remove", "ban", "submit"]);
    assert_eq!(log.body["entries"][1]["held"], 1, "{:?}", log.body);
    assert_eq!(log.body["entries"][1]["points"], 40, "{:?}", log.body);
    assert_eq!(
        log.body["entries"][1]["by"], "admin",
        "who removed it: {:?}",
        log.body
    );
    let audit = app
        .call(Method::GET, "/admin/audit?limit=1000", None, true)
        .await;
    let removal = audit.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "player_remove")
        .cloned()
        .expect("audited");
    assert_eq!(
        (
            &removal["player"],
            &removal["board"],
            removal["season"].is_string()
        ),
        (&json!("max"), &json!("hr"), true),
        "{removal}"
    );
}

/// The program under test: `server/src/main.rs`, built by cargo for these tests.
fn bin() -> std::path::PathBuf {
    scorecast_tests::process::scorecast_bin(env!("CARGO_BIN_EXE_scorecast-e2e"))
}

fn start_server(redis_url: &str, tag: &str) -> ServerProcess {
    ServerProcess::start_on(
        &bin(),
        &temp_dir(tag),
        redis_url,
        &[],
        &[
            ("SCORECAST_ADMIN_TOKEN", ADMIN_TOKEN),
            ("SCORECAST_TOKEN_SECRET", TOKEN_SECRET),
            ("RUST_LOG", "info"),
        ],
    )
}

/// How many of `boards` hold the ban on every board of `player` (`*<player>` in their bans).
async fn enforced(
    c: &mut redis::aio::MultiplexedConnection,
    boards: &[String],
    player: &str,
) -> usize {
    let mut pipe = redis::pipe();
    for b in boards {
        pipe.hexists(format!("lb:{{{b}}}:bans"), format!("*{player}"));
    }
    let on: Vec<bool> = pipe.query_async(c).await.unwrap();
    on.iter().filter(|&&x| x).count()
}

/// Waits (bounded) until `cond` holds on the count of enforcing boards; returns the time taken.
async fn converge(
    c: &mut redis::aio::MultiplexedConnection,
    boards: &[String],
    player: &str,
    want: usize,
) -> Duration {
    let start = Instant::now();
    let deadline = start + Duration::from_secs(60);
    loop {
        let n = enforced(c, boards, player).await;
        let pending: usize = c.hlen("{sc:bans}:intents").await.unwrap();
        if n == want && pending == 0 {
            return start.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "not converged: {n} of {} boards enforce, want {want}; {pending} intents pending",
            boards.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts `method /admin/bans/zed` without awaiting it, waits until the board 100th in order
/// has taken the step (the request is mid-way), then SIGKILLs the server.
async fn kill_mid_request(
    server: &mut ServerProcess,
    c: &mut redis::aio::MultiplexedConnection,
    method: Method,
    body: Value,
    marker: &str,
    banned_at_marker: bool,
) {
    let url = format!("http://127.0.0.1:{}/admin/bans/zed", server.port);
    let req = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(ADMIN_TOKEN)
        .json(&body)
        .send();
    let request = tokio::spawn(req);
    let key = format!("lb:{{{marker}}}:bans");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let on: bool = c.hexists(&key, "*zed").await.unwrap();
        if on == banned_at_marker {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the request never reached {marker}"
        );
    }
    server.kill();
    let _ = request.await;
}

/// The instance is SIGKILLed in the middle of a ban on every board (1 500 boards), then in the
/// middle of its lift. Each time the ban list already says what was asked (listed after the
/// ban, gone after the lift) while only part of the boards enforce it; after a restart the
/// pending intent is resumed and every board converges: all 1 500 enforce the ban (the player's
/// submission is refused), then none does (accepted again). Prints the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_on_every_board_converges_after_a_crash_mid_request() {
    const BOARDS: usize = 1_500;
    let redis = start_test_redis();
    let mut server = start_server(&redis.url(), "crash-ban");
    let boards: Vec<String> = (0..BOARDS).map(|i| format!("m{i:04}")).collect();
    let admin = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{}", server.port);
    futures_util::stream::iter(boards.iter().map(|b| {
        let (admin, base) = (admin.clone(), base.clone());
        async move {
            let r = admin
                .put(format!("{base}/admin/boards/{b}"))
                .bearer_auth(ADMIN_TOKEN)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
        }
    }))
    .for_each_concurrent(16, |f| f)
    .await;
    let mut c = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();

    // Ban: killed once the 100th board has it.
    kill_mid_request(
        &mut server,
        &mut c,
        Method::PUT,
        json!({"reason": "bot"}),
        &boards[99],
        true,
    )
    .await;
    let at_kill = enforced(&mut c, &boards, "zed").await;
    assert!(
        (100..BOARDS).contains(&at_kill),
        "the kill should land mid-way: {at_kill} of {BOARDS} boards"
    );
    let listed: bool = c.hexists("sc:bans", "zed").await.unwrap();
    assert!(listed, "the ban is listed from the start");
    let mut server = start_server(&redis.url(), "crash-ban-2");
    let took = converge(&mut c, &boards, "zed", BOARDS).await;
    println!("ban: {at_kill} of {BOARDS} boards enforced at the kill, {BOARDS} after the restart, converged {took:?} after it");
    let api = scorecast_tests::Api::new(server.port, Duration::from_secs(10));
    let refused = api
        .admin(
            Method::POST,
            &format!("/admin/boards/{}/players/zed/score", boards[BOARDS - 1]),
            json!({"points": 1}),
        )
        .await;
    assert_eq!(refused.code(), "forbidden");

    // Lift: killed once the 100th board has lost it.
    kill_mid_request(
        &mut server,
        &mut c,
        Method::DELETE,
        Value::Null,
        &boards[99],
        false,
    )
    .await;
    let at_kill = enforced(&mut c, &boards, "zed").await;
    assert!(
        (1..=BOARDS - 100).contains(&at_kill),
        "the kill should land mid-way: {at_kill} of {BOARDS} boards still enforce"
    );
    let listed: bool = c.hexists("sc:bans", "zed").await.unwrap();
    assert!(!listed, "the lift is not listed from the start");
    let server = start_server(&redis.url(), "crash-ban-3");
    let took = converge(&mut c, &boards, "zed", 0).await;
    println!("lift: {at_kill} of {BOARDS} boards still enforced at the kill, 0 after the restart, converged {took:?} after it");
    let api = scorecast_tests::Api::new(server.port, Duration::from_secs(10));
    let list = api.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(list.body["bans"], json!([]), "{:?}", list.body);
    let accepted = api
        .admin(
            Method::POST,
            &format!("/admin/boards/{}/players/zed/score", boards[BOARDS - 1]),
            json!({"points": 1}),
        )
        .await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);
}

/// A step of an intent replaced meanwhile changes nothing: the ban's intent applied again after
/// its lift (an instance that was slow, or resumed late) leaves every board unbanned, and the
/// lift's intent applied again after a new ban leaves every board banned.
#[tokio::test]
async fn a_stale_step_of_a_ban_on_every_board_changes_nothing() {
    use scorecast_server::store::Intent;
    let app = spawn_app().await;
    for b in ["s1", "s2", "s3"] {
        app.board(b, json!({})).await;
    }
    let mut c = app.redis_conn().await;
    let boards: Vec<String> = ["s1", "s2", "s3"].map(String::from).to_vec();
    assert_eq!(ban(&app, "oz", json!({"reason": "r1"})).await.status, 200);
    let record: String = c.hget("sc:bans", "oz").await.unwrap();
    let v_ban: i64 = c.hget("sc:bans", "#oz").await.unwrap();
    let stale_ban = Intent::Ban { v: v_ban, record };
    assert_eq!(
        app.call(Method::DELETE, "/admin/bans/oz", None, true)
            .await
            .status,
        204
    );
    app.state
        .store
        .apply_intent("oz", &stale_ban)
        .await
        .unwrap();
    assert_eq!(enforced(&mut c, &boards, "oz").await, 0);

    let stale_lift = Intent::Lift {
        v: v_ban + 1,
        layer: "+".into(),
        why: "lifted".into(),
        by: "admin".into(),
    };
    assert_eq!(ban(&app, "oz", json!({"reason": "r2"})).await.status, 200);
    app.state
        .store
        .apply_intent("oz", &stale_lift)
        .await
        .unwrap();
    assert_eq!(enforced(&mut c, &boards, "oz").await, 3);
    let pending: usize = c.hlen("{sc:bans}:intents").await.unwrap();
    assert_eq!(pending, 0);
}

/// Bans and lifts on every board raced against each other (8 rounds of 6 concurrent requests
/// over 40 boards): once they are all answered, every board agrees with the ban list — all
/// enforce the ban if it is listed, none if not — and no intent is left pending. Lifted at the
/// end, no board is left with a bans hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raced_bans_and_lifts_on_every_board_agree_with_the_ban_list() {
    let app = spawn_app().await;
    let boards: Vec<String> = (0..40).map(|i| format!("r{i:02}")).collect();
    for b in &boards {
        app.board(b, json!({})).await;
    }
    let mut c = app.redis_conn().await;
    let (mut listed_rounds, mut unlisted_rounds) = (0, 0);
    for round in 0..8 {
        let reqs = (0..6).map(|i| {
            let app = &app;
            async move {
                if (i + round) % 2 == 0 {
                    ban(app, "ray", json!({"reason": format!("r{round}.{i}")})).await;
                } else {
                    app.call(Method::DELETE, "/admin/bans/ray", None, true)
                        .await;
                }
            }
        });
        futures_util::future::join_all(reqs).await;
        let listed: bool = c.hexists("sc:bans", "ray").await.unwrap();
        let n = enforced(&mut c, &boards, "ray").await;
        let pending: usize = c.hlen("{sc:bans}:intents").await.unwrap();
        assert_eq!(pending, 0, "round {round}");
        assert_eq!(
            n,
            if listed { boards.len() } else { 0 },
            "round {round}: listed {listed}, {n} boards enforce"
        );
        if listed {
            listed_rounds += 1;
        } else {
            unlisted_rounds += 1;
        }
    }
    println!("raced: {listed_rounds} rounds ended banned, {unlisted_rounds} lifted");

    // Once lifted, no board keeps a bans hash (the versions live apart), so submissions there
    // skip the ban check again.
    app.call(Method::DELETE, "/admin/bans/ray", None, true)
        .await;
    for b in &boards {
        let exists: bool = c.exists(format!("lb:{{{b}}}:bans")).await.unwrap();
        assert!(!exists, "{b} still has a bans hash");
    }
}

/// The expiry of a ban on every board goes through an intent like an admin's lift: at
/// `until_ms` the `ban.lift` job frees every board, leaves no intent pending, and each board's
/// moderation history records the `unban` with reason `expired` after the `ban`.
#[tokio::test]
async fn an_expired_ban_on_every_board_is_lifted_everywhere_and_recorded() {
    const T0: i64 = 1_741_608_000_000;
    let app = scorecast_tests::spawn_app_with(
        |s| s.workers = false,
        scorecast_server::clock::Clock::manual(T0),
    )
    .await;
    let boards: Vec<String> = ["x1", "x2", "x3"].map(String::from).to_vec();
    for b in &boards {
        app.board(b, json!({})).await;
    }
    let r = ban(
        &app,
        "uma",
        json!({"reason": "flood", "until_ms": T0 + 60_000}),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut c = app.redis_conn().await;
    assert_eq!(enforced(&mut c, &boards, "uma").await, 3);

    app.clock.set(T0 + 60_000);
    let (job, ok) = scorecast_server::jobs::run_next(&app.state, &NoNotify)
        .await
        .unwrap()
        .expect("a due job");
    assert_eq!((job.kind.as_str(), ok), ("ban.lift", true));
    assert_eq!(enforced(&mut c, &boards, "uma").await, 0);
    let pending: usize = c.hlen("{sc:bans}:intents").await.unwrap();
    assert_eq!(pending, 0);
    for b in &boards {
        let r: redis::streams::StreamRangeReply =
            c.xrange_all(format!("lb:{{{b}}}:modlog")).await.unwrap();
        let got: Vec<(String, String)> = r
            .ids
            .iter()
            .map(|e| {
                (
                    e.get::<String>("action").unwrap_or_default(),
                    e.get::<String>("reason").unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("ban".to_owned(), "flood".to_owned()),
                ("unban".to_owned(), "expired".to_owned())
            ],
            "{b}"
        );
    }
}
