//! Tournaments: one board PUT configures the schedule, joining, a size cap and limited attempts;
//! the submission script refuses, atomically, what the rules forbid (`not_started`, `ended`,
//! `not_joined`, `full`, `no_attempts_left`) and each refusal changes no key; joins over HTTP and
//! the WebSocket are idempotent and never pass the cap, however they race; the end is a job that
//! freezes the final standings and hands out rewards once.

use std::collections::{BTreeMap, HashSet};

use futures_util::future::join_all;
use reqwest::Method;
use scorecast_server::jobs::{self, Notifier};
use scorecast_server::queue::Job;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::ws::WsClient;
use scorecast_tests::{spawn_app_with, Api, Resp, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;
const START: i64 = T0 + 60_000;
const END: i64 = T0 + 3_600_000;

async fn app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

/// A one-off tournament from START to END with these rules.
fn tourney(rules: Value) -> Value {
    let mut t = json!({"schedule": {"start_ms": START, "end_ms": END}});
    for (k, v) in rules.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({"op": "incr", "submit_limit": null, "tournament": t})
}

/// A game server's (admin key's) submission for `player`, answered whatever it is.
async fn submit(api: &Api, board: &str, player: &str, id: &str, points: i64) -> Resp {
    api.admin(
        Method::POST,
        &format!("/admin/boards/{board}/players/{player}/score"),
        json!({"points": points, "id": id}),
    )
    .await
}

async fn join(api: &Api, board: &str, player: &str) -> Resp {
    let token = api.token(player, None);
    api.call_as(
        Some(&token),
        Method::POST,
        &format!("/v1/boards/{board}/join"),
        None,
    )
    .await
}

/// A player's `POST /v1/boards/{board}/runs`, answered whatever it is.
async fn start_run(api: &Api, board: &str, player: &str) -> Resp {
    let token = api.token(player, None);
    api.call_as(
        Some(&token),
        Method::POST,
        &format!("/v1/boards/{board}/runs"),
        None,
    )
    .await
}

/// A verified tournament board `v` (the 2048 validator, best score) with these rules, open.
async fn verified_tourney(app: &TestApp, rules: Value) {
    let mut cfg = tourney(rules);
    cfg["op"] = json!("best");
    cfg["validator"] = json!("2048");
    app.board("v", cfg).await;
    app.clock.set(START);
}

async fn zcard(app: &TestApp, key: &str) -> u64 {
    let mut c = app.redis_conn().await;
    redis::cmd("ZCARD")
        .arg(key)
        .query_async(&mut c)
        .await
        .unwrap()
}

/// One PUT configures a tournament, and the board list shows it as given (with the default
/// `ending_soon_ms`); each incoherent combination is `bad_request` and changes no key.
#[tokio::test]
async fn one_board_put_configures_a_tournament_and_bad_combinations_change_nothing() {
    let app = app().await;
    let r = app
        .board(
            "cup",
            tourney(json!({"join_required": true, "max_size": 8, "max_attempts": 3})),
        )
        .await;
    assert_eq!(r.body["tournament"]["max_size"], 8, "{:?}", r.body);
    let list = app.get("/v1/boards").await;
    let cup = list.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "cup")
        .cloned()
        .unwrap();
    assert_eq!(
        cup["tournament"],
        json!({"schedule": {"start_ms": START, "end_ms": END}, "join_required": true,
               "max_size": 8, "max_attempts": 3, "ending_soon_ms": 300000})
    );

    let before = app.dump().await;
    for bad in [
        json!({"tournament": {}}),
        json!({"tournament": {"schedule": {"start_ms": END, "end_ms": START}}}),
        json!({"tournament": {"schedule": {"recurring": true}}}),
        json!({"reset": "daily", "tournament": {"schedule": {"start_ms": START, "end_ms": END}}}),
        tourney(json!({"max_size": 0})),
        tourney(json!({"max_attempts": 0})),
        tourney(json!({"bucket": 5})),
    ] {
        for board in ["cup", "fresh"] {
            let r = app
                .admin(Method::PUT, &format!("/admin/boards/{board}"), bad.clone())
                .await;
            assert_eq!(r.status, 400, "{bad}: {:?}", r.body);
            assert_eq!(r.code(), "bad_request", "{bad}: {:?}", r.body);
        }
    }
    assert_eq!(app.dump().await, before);
    // A recurring tournament on a calendar board is fine.
    app.board(
        "daily-cup",
        json!({"reset": "daily", "tournament": {"schedule": {"recurring": true}}}),
    )
    .await;
}

/// Each refusal in its turn, before the start, without joining, when full, past the attempts and
/// after the end: its code (and HTTP status), and not one key changed.
#[tokio::test]
async fn every_tournament_refusal_has_its_code_and_changes_nothing() {
    let app = app().await;
    app.board(
        "cup",
        tourney(json!({"join_required": true, "max_size": 1, "max_attempts": 2})),
    )
    .await;
    let refused = |r: &Resp, status: u16, code: &str| {
        assert_eq!(r.status, status, "{:?}", r.body);
        assert_eq!(r.code(), code, "{:?}", r.body);
    };

    // Before the start: joining is open, playing is not.
    let before = app.dump().await;
    refused(
        &submit(&app, "cup", "kim", "s1", 5).await,
        409,
        "not_started",
    );
    assert_eq!(app.dump().await, before);

    app.clock.set(START);
    let before = app.dump().await;
    refused(
        &submit(&app, "cup", "kim", "s1", 5).await,
        403,
        "not_joined",
    );
    assert_eq!(app.dump().await, before);

    let kim = join(&app, "cup", "kim").await;
    assert_eq!(kim.status, 200, "{:?}", kim.body);
    assert_eq!(
        kim.body,
        json!({"board": "cup", "season": "all", "player": "kim", "joined_ms": START})
    );
    let before = app.dump().await;
    refused(&join(&app, "cup", "lee").await, 409, "full");
    // Playing without joining is `not_joined` before the cap is looked at.
    refused(
        &submit(&app, "cup", "lee", "l1", 5).await,
        403,
        "not_joined",
    );
    assert_eq!(app.dump().await, before);

    for (id, pts) in [("s1", 5), ("s2", 7)] {
        let r = submit(&app, "cup", "kim", id, pts).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    // A retry of an accepted submission is its first answer, not a third attempt.
    let again = submit(&app, "cup", "kim", "s2", 7).await;
    assert_eq!(again.body["duplicate"], true, "{:?}", again.body);
    let before = app.dump().await;
    refused(
        &submit(&app, "cup", "kim", "s3", 1).await,
        409,
        "no_attempts_left",
    );
    assert_eq!(app.dump().await, before);

    app.clock.set(END);
    let before = app.dump().await;
    refused(&submit(&app, "cup", "kim", "s4", 1).await, 409, "ended");
    refused(&join(&app, "cup", "lee").await, 409, "ended");
    // Joining again is the same answer, even now.
    assert_eq!(join(&app, "cup", "kim").await.body, kim.body);
    assert_eq!(app.dump().await, before);
    let top = app.get("/v1/boards/cup/top").await;
    assert_eq!(top.body["entries"][0]["score"], 12, "{:?}", top.body);

    // Joining a board without a tournament, or no board at all.
    app.board("plain", json!({})).await;
    let before = app.dump().await;
    refused(&join(&app, "plain", "kim").await, 400, "bad_request");
    refused(&join(&app, "nope", "kim").await, 404, "unknown_board");
    let r = app
        .call(Method::POST, "/v1/boards/cup/join", None, false)
        .await;
    assert_eq!(r.status, 401, "{:?}", r.body);
    assert_eq!(app.dump().await, before);
}

/// Without `join_required`, `max_size` admits the first distinct players to score: the next
/// one is refused `full`, those already in keep playing.
#[tokio::test]
async fn without_joining_the_first_players_to_score_fill_the_tournament() {
    let app = app().await;
    app.board("open", tourney(json!({"max_size": 2}))).await;
    app.clock.set(START);
    for p in ["ann", "bob"] {
        assert_eq!(submit(&app, "open", p, "a", 1).await.status, 200);
    }
    let before = app.dump().await;
    let r = submit(&app, "open", "cat", "a", 1).await;
    assert_eq!(r.code(), "full", "{:?}", r.body);
    assert_eq!(app.dump().await, before);
    assert_eq!(submit(&app, "open", "ann", "b", 1).await.status, 200);
    assert_eq!(zcard(&app, "lb:{open}:t:all:joined").await, 2);
}

/// Many concurrent submissions of one player, with `max_attempts` 3, through two instances:
/// exactly 3 are accepted and every other one is `no_attempts_left`.
#[tokio::test]
async fn racing_submissions_of_one_player_get_exactly_max_attempts_accepted() {
    let app = app().await;
    let second = app.second_instance_with(|s| s.workers = false).await;
    app.board("race", tourney(json!({"max_attempts": 3}))).await;
    app.clock.set(START);
    let apis = [
        Api::new(app.port, std::time::Duration::from_secs(30)),
        Api::new(second.port, std::time::Duration::from_secs(30)),
    ];
    const N: usize = 120;
    let answers = join_all((0..N).map(|i| {
        let api = &apis[i % 2];
        async move { submit(api, "race", "kim", &format!("s{i}"), 1).await }
    }))
    .await;
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    for r in &answers {
        let code = if r.status == 200 {
            "accepted".to_owned()
        } else {
            r.code().to_owned()
        };
        *codes.entry(code).or_default() += 1;
    }
    assert_eq!(
        codes,
        BTreeMap::from([("accepted".into(), 3), ("no_attempts_left".into(), N - 3)])
    );
    let mut c = app.redis_conn().await;
    let made: i64 = redis::cmd("HGET")
        .arg("lb:{race}:t:all:attempts")
        .arg("kim")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(made, 3);
    let top = app.get("/v1/boards/race/top").await;
    assert_eq!(top.body["entries"][0]["score"], 3, "{:?}", top.body);
}

/// Hundreds of players join at once, each twice (once through each of two instances), for 40
/// places: exactly 40 players are in, each player's two answers agree (the same `joined_ms`, or
/// both `full`), and the entrants' set holds exactly the players answered 200.
#[tokio::test]
async fn racing_joins_through_two_instances_never_pass_the_cap() {
    let app = app().await;
    let second = app.second_instance_with(|s| s.workers = false).await;
    const CAP: usize = 40;
    const PLAYERS: usize = 200;
    app.board(
        "cap",
        tourney(json!({"join_required": true, "max_size": CAP})),
    )
    .await;
    let apis = [
        Api::new(app.port, std::time::Duration::from_secs(30)),
        Api::new(second.port, std::time::Duration::from_secs(30)),
    ];
    let answers = join_all((0..PLAYERS * 2).map(|i| {
        let api = &apis[i % 2];
        let player = format!("p{}", i / 2);
        async move { (player.clone(), join(api, "cap", &player).await) }
    }))
    .await;
    let mut by_player: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (p, r) in answers {
        let v = if r.status == 200 {
            r.body["joined_ms"].clone()
        } else {
            assert_eq!(r.code(), "full", "{:?}", r.body);
            json!("full")
        };
        by_player.entry(p).or_default().push(v);
    }
    let mut admitted = HashSet::new();
    for (p, vs) in &by_player {
        assert_eq!(vs[0], vs[1], "{p} got two different answers");
        if vs[0] != "full" {
            admitted.insert(p.clone());
        }
    }
    assert_eq!(admitted.len(), CAP);
    let mut c = app.redis_conn().await;
    let members: HashSet<String> = redis::cmd("ZRANGE")
        .arg("lb:{cap}:t:all:joined")
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(members, admitted);
}

/// `join` over the WebSocket answers `joined` with the request's id, the same again on a
/// re-join, and `rejected` with the tournament's code (`full`) or `unauthorized` for a
/// spectator.
#[tokio::test]
async fn join_over_the_websocket_is_answered_joined_or_rejected() {
    let app = app().await;
    app.board("cup", tourney(json!({"max_size": 1}))).await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator
        .send_json(json!({"type": "join", "id": "j0", "board": "cup"}))
        .await;
    let r = spectator
        .recv_until(scorecast_tests::ws::WAIT, |v| v["id"] == "j0")
        .await;
    assert_eq!(
        (r["type"].clone(), r["code"].clone()),
        (json!("rejected"), json!("unauthorized"))
    );

    let mut kim = WsClient::connect(&app.ws_url()).await;
    kim.hello(&app.token("kim", None)).await;
    let mut answers = Vec::new();
    for id in ["j1", "j2"] {
        kim.send_json(json!({"type": "join", "id": id, "board": "cup"}))
            .await;
        let a = kim
            .recv_until(scorecast_tests::ws::WAIT, |v| v["id"] == id)
            .await;
        assert_eq!(a["type"], "joined", "{a}");
        assert_eq!(a["player"], "kim", "{a}");
        answers.push(a["joined_ms"].clone());
    }
    assert_eq!(answers, vec![json!(T0), json!(T0)]);

    let mut lee = WsClient::connect(&app.ws_url()).await;
    lee.hello(&app.token("lee", None)).await;
    let before = app.dump().await;
    lee.send_json(json!({"type": "join", "id": "j3", "board": "cup"}))
        .await;
    let a = lee
        .recv_until(scorecast_tests::ws::WAIT, |v| v["id"] == "j3")
        .await;
    assert_eq!(
        (a["type"].clone(), a["code"].clone()),
        (json!("rejected"), json!("full"))
    );
    assert_eq!(app.dump().await, before);
}

/// On a verified board an attempt is a started run: with `max_attempts` 2 the third run is
/// refused `no_attempts_left` and changes nothing; a run of a player who did not join a
/// `join_required` tournament is `not_joined`.
#[tokio::test]
async fn on_a_verified_board_each_started_run_is_an_attempt() {
    let app = app().await;
    verified_tourney(&app, json!({"max_attempts": 2, "join_required": true})).await;
    let start = |player| start_run(&app.api, "v", player);
    let before = app.dump().await;
    let r = start("kim").await;
    assert_eq!(r.code(), "not_joined", "{:?}", r.body);
    assert_eq!(app.dump().await, before);
    assert_eq!(join(&app, "v", "kim").await.status, 200);
    for _ in 0..2 {
        let r = start("kim").await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let before = app.dump().await;
    let r = start("kim").await;
    assert_eq!(r.code(), "no_attempts_left", "{:?}", r.body);
    assert_eq!(app.dump().await, before);
}

/// A run is an attempt of the occurrence it started in: once an admin starts a new occurrence,
/// the old run's proof is refused `ended` and changes nothing (it would have ranked a player who
/// never entered the new, full occurrence); a run started in the new occurrence scores there.
#[tokio::test]
async fn a_runs_proof_counts_only_in_the_occurrence_it_started_in() {
    let app = app().await;
    verified_tourney(
        &app,
        json!({"max_size": 1, "max_attempts": 1, "join_required": true}),
    )
    .await;
    let start = |player: &'static str| {
        let run = start_run(&app.api, "v", player);
        async move {
            let r = run.await;
            assert_eq!(r.status, 200, "{player}: {:?}", r.body);
            r.body["run"].as_str().unwrap().to_owned()
        }
    };
    // An empty proof: no move, score 0, valid whatever the run's seed.
    let prove = |player: &'static str, run: String| {
        let token = app.token(player, None);
        let req = app
            .http
            .post(app.url(&format!("/v1/boards/v/runs/{run}/proof")))
            .bearer_auth(token)
            .body("");
        async move {
            let res = req.send().await.unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(join(&app, "v", "ann").await.status, 200);
    let old = start("ann").await;
    assert_eq!(app.rollover("v", "second").await.status, 200);
    assert_eq!(join(&app, "v", "bo").await.status, 200);

    let before = app.dump().await;
    let (status, body) = prove("ann", old.clone()).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &json!("ended")),
        "{body}"
    );
    assert_eq!(app.dump().await, before, "a refused proof changed Redis");

    let (status, body) = prove("bo", start("bo").await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["season"], "second", "{body}");
    let top = app.get("/v1/boards/v/top").await;
    assert_eq!(
        standings(&top.body),
        [("bo".to_owned(), body["score"].as_i64().unwrap())],
        "{:?}",
        top.body
    );
}

/// A player banned from a tournament board neither joins nor starts a run there (`forbidden`,
/// nothing changes): either would enter them and take one of `max_size` places.
#[tokio::test]
async fn a_banned_player_neither_joins_nor_starts_a_run() {
    let app = app().await;
    verified_tourney(&app, json!({"max_size": 2})).await;
    let ban = app
        .admin(Method::PUT, "/admin/bans/kim", json!({"board": "v"}))
        .await;
    assert_eq!(ban.status, 200, "{:?}", ban.body);
    let before = app.dump().await;
    let r = join(&app, "v", "kim").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "forbidden"),
        "{:?}",
        r.body
    );
    let r = start_run(&app.api, "v", "kim").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (403, "forbidden"),
        "{:?}",
        r.body
    );
    assert_eq!(
        app.dump().await,
        before,
        "a banned player's join or run changed Redis"
    );
    // Another player still enters.
    assert_eq!(join(&app, "v", "lee").await.status, 200);
}

/// Records what would be pushed to players' WebSockets (the jobs' `Notifier`).
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<(String, String)>>);

impl Notifier for Recorder {
    fn notify<'a>(
        &'a self,
        player: &'a scorecast_shared::Id,
        kind: &'a str,
        _payload: &'a Value,
    ) -> futures_util::future::BoxFuture<'a, scorecast_server::error::AppResult<usize>> {
        self.0
            .lock()
            .unwrap()
            .push((player.to_string(), kind.to_owned()));
        Box::pin(futures_util::future::ready(Ok(1)))
    }
}

/// Runs every due job of the `scorecast` queue; returns their kinds, sorted.
async fn run_jobs(app: &TestApp, rec: &Recorder) -> Vec<String> {
    let mut ran = Vec::new();
    while let Some((job, ok)) = jobs::run_next(&app.state, rec).await.unwrap() {
        assert!(ok, "{job:?}");
        ran.push(job.kind.to_string());
    }
    ran.sort();
    ran
}

async fn rewards(app: &TestApp, board: &str) -> Vec<String> {
    let mut c = app.redis_conn().await;
    let mut keys: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("lb:{{{board}}}:rewards"))
        .query_async(&mut c)
        .await
        .unwrap();
    keys.sort();
    keys
}

fn standings(v: &Value) -> Vec<(String, i64)> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["player"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The end of a one-off tournament is a job on the `scorecast` queue, due at `end_ms`: it
/// freezes the final standings (readable at `GET /v1/boards/{b}/final`, `not_found` before) and
/// grants the `rewards_top` rewards. Run again — also after the live board changed, as a
/// worker that crashed after freezing and is retried would — it freezes nothing new and grants
/// nothing twice.
#[tokio::test]
async fn the_end_job_freezes_the_final_standings_and_rewards_once() {
    let app = app().await;
    let mut cfg = tourney(json!({}));
    cfg["rewards_top"] = json!(2);
    app.board("cup", cfg).await;
    app.clock.set(START);
    for (p, pts) in [("ann", 30), ("ben", 20), ("cat", 10)] {
        assert_eq!(submit(&app, "cup", p, "a", pts).await.status, 200);
    }
    let r = app.get("/v1/boards/cup/final").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "not_found"),
        "{:?}",
        r.body
    );
    // A season the board never had, and a board without a tournament, say so.
    let r = app.get("/v1/boards/cup/final?season=2001-01-01").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "unknown_season"),
        "{:?}",
        r.body
    );
    app.board("plain", json!({})).await;
    let r = app.get("/v1/boards/plain/final").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "not_found"),
        "{:?}",
        r.body
    );
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has no tournament"),
        "{:?}",
        r.body
    );
    let rec = Recorder::default();
    assert_eq!(
        run_jobs(&app, &rec).await,
        ["tournament.event"],
        "only `started` is due before the end"
    );

    app.clock.set(END);
    assert_eq!(
        run_jobs(&app, &rec).await,
        [
            "notify",
            "notify",
            "reward.grant",
            "reward.grant",
            "tournament.end",
            "tournament.event"
        ]
    );
    let want = vec![
        ("ann".to_owned(), 30),
        ("ben".to_owned(), 20),
        ("cat".to_owned(), 10),
    ];
    let fin = app.get("/v1/boards/cup/final").await;
    assert_eq!(fin.status, 200, "{:?}", fin.body);
    assert_eq!(
        (fin.body["season"].clone(), fin.body["total"].clone()),
        (json!("all"), json!(3))
    );
    assert_eq!(standings(&fin.body), want);
    assert_eq!(rewards(&app, "cup").await, ["all:ann", "all:ben"]);

    // The live board changes afterwards (an admin removes ann); the job runs twice more.
    let r = app
        .call(Method::DELETE, "/admin/boards/cup/players/ann", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let mut c = app.redis_conn().await;
    let generation: String = redis::cmd("GET")
        .arg("lb:{cup}:gen")
        .query_async(&mut c)
        .await
        .unwrap();
    let payload = jobs::TournamentEndPayload {
        board: "cup".into(),
        end_ms: END,
        generation,
    };
    for _ in 0..2 {
        jobs::handle(
            &app.state,
            &rec,
            &job_of(jobs::KIND_TOURNAMENT_END, &payload),
        )
        .await
        .unwrap();
    }
    run_jobs(&app, &rec).await;
    let fin = app.get("/v1/boards/cup/final?season=all&limit=2").await;
    assert_eq!(standings(&fin.body), want[..2].to_vec());
    // The final standings are the whole board's: a bucket or player parameter is refused, not
    // ignored.
    let r = app.get("/v1/boards/cup/final?season=all&bucket=1").await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "bad_request"));
    assert_eq!(rewards(&app, "cup").await, ["all:ann", "all:ben"]);
    assert_eq!(rec.0.lock().unwrap().len(), 2, "one notify per grant");
}

/// On a bucketed tournament board the final standings and the `rewards_top` are the whole
/// board's, every bucket's players ranked together (merged from the buckets, where the
/// submissions wrote them).
#[tokio::test]
async fn a_bucketed_tournament_ends_with_the_whole_boards_standings() {
    let app = app().await;
    let mut cfg = tourney(json!({}));
    cfg["rewards_top"] = json!(2);
    cfg["bucket_size"] = json!(2);
    app.board("cup", cfg).await;
    app.clock.set(START);
    // ann and ben in bucket 1, cat and dan in bucket 2.
    for (p, pts) in [("ann", 10), ("ben", 40), ("cat", 30), ("dan", 20)] {
        assert_eq!(submit(&app, "cup", p, "a", pts).await.status, 200);
    }
    app.clock.set(END);
    let rec = Recorder::default();
    let ran = run_jobs(&app, &rec).await;
    assert!(ran.contains(&"tournament.end".to_owned()), "{ran:?}");
    run_jobs(&app, &rec).await;
    let fin = app.get("/v1/boards/cup/final").await;
    assert_eq!(fin.status, 200, "{:?}", fin.body);
    assert_eq!(fin.body["total"], 4, "{:?}", fin.body);
    let want: Vec<(String, i64)> = [("ben", 40), ("cat", 30), ("dan", 20), ("ann", 10)]
        .iter()
        .map(|&(p, s)| (p.to_owned(), s))
        .collect();
    assert_eq!(standings(&fin.body), want);
    assert_eq!(rewards(&app, "cup").await, ["all:ben", "all:cat"]);
}

fn job_of(kind: &str, payload: &impl serde::Serialize) -> Job {
    let text = json!({
        "id": "manual", "kind": kind, "payload": payload,
        "priority": 0, "attempts": 1, "max_attempts": 5,
    })
    .to_string();
    serde_json::from_str(&text).unwrap()
}

/// 2025-03-11T00:00:00Z: the end of the daily season 2025-03-10.
const DAY_END: i64 = 1_741_651_200_000;

/// A recurring tournament is one per season of a calendar board: its attempts run out within
/// a day, `ending_soon` comes before the day's end, the season's rollover job freezes that day's
/// final standings (`ended`) and announces the next day (`started`), a new occurrence where the
/// player has all their attempts again.
#[tokio::test]
async fn a_recurring_tournament_ends_with_its_season_and_the_next_one_opens() {
    let app = app().await;
    app.board(
        "daily",
        json!({"reset": "daily", "submit_limit": null,
               "tournament": {"schedule": {"recurring": true}, "max_attempts": 1}}),
    )
    .await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("daily", "top", json!({})).await;
    assert_eq!(submit(&app, "daily", "kim", "d1", 4).await.status, 200);
    let r = submit(&app, "daily", "kim", "d2", 4).await;
    assert_eq!(r.code(), "no_attempts_left", "{:?}", r.body);

    let rec = Recorder::default();
    app.clock.set(DAY_END - 300_000);
    assert_eq!(run_jobs(&app, &rec).await, ["tournament.event"]);
    app.clock.set(DAY_END);
    assert_eq!(run_jobs(&app, &rec).await, ["season.rollover"]);
    // The day's ending_soon and ended, then the next day's started.
    let got = tournament_messages_until_ended(&mut spectator).await;
    let seen: Vec<_> = got
        .iter()
        .map(|v| (v["event"].clone(), v["season"].clone(), v["end_ms"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("ending_soon"), json!("2025-03-10"), json!(DAY_END)),
            (json!("ended"), json!("2025-03-10"), json!(DAY_END)),
        ]
    );
    let started = spectator
        .recv_until(scorecast_tests::ws::WAIT, |v| {
            v["type"] == "tournament" && v["event"] == "started"
        })
        .await;
    assert_eq!(
        (started["season"].clone(), started["start_ms"].clone()),
        (json!("2025-03-11"), json!(DAY_END))
    );
    let fin = app.get("/v1/boards/daily/final").await;
    assert_eq!(fin.body["season"], "2025-03-10", "{:?}", fin.body);
    assert_eq!(standings(&fin.body), [("kim".to_owned(), 4)]);

    let r = submit(&app, "daily", "kim", "d3", 6).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["season"], "2025-03-11", "{:?}", r.body);
}

/// Every `tournament` message a socket receives until (and with) the `ended` one.
async fn tournament_messages_until_ended(ws: &mut WsClient) -> Vec<Value> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + scorecast_tests::ws::WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_within(left).await {
            Some(scorecast_tests::ws::Incoming::Json(v)) if v["type"] == "tournament" => {
                let ended = v["event"] == "ended";
                got.push(v);
                if ended {
                    return got;
                }
            }
            Some(scorecast_tests::ws::Incoming::Json(_)) => {}
            other => panic!("no `ended` within the wait: {other:?} after {got:?}"),
        }
    }
}

/// The live events reach every session with a view of the board, on both instances, once per
/// session however many views it has: `started` at `start_ms`, `ending_soon` `ending_soon_ms`
/// before the end, and `ended` with the top of the final standings and, for a player's session,
/// the player's own final rank (none for a spectator), also where the session watched the board
/// before its `hello`.
#[tokio::test]
async fn started_ending_soon_and_ended_reach_the_boards_watchers_on_every_instance() {
    let app = app().await;
    let second = app.second_instance_with(|s| s.workers = false).await;
    app.board("live", tourney(json!({"ending_soon_ms": 60_000})))
        .await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    spectator.subscribe("live", "top", json!({})).await;
    let mut kim = WsClient::connect(&second.ws_url()).await;
    kim.hello(&app.token("kim", None)).await;
    kim.subscribe("live", "top", json!({})).await;
    kim.subscribe("live", "me", json!({})).await;
    // A page that watches the board first and says `hello` after (the live page does).
    let mut lee = WsClient::connect(&app.ws_url()).await;
    lee.subscribe("live", "top", json!({})).await;
    lee.hello(&app.token("lee", None)).await;

    let rec = Recorder::default();
    app.clock.set(START);
    assert_eq!(run_jobs(&app, &rec).await, ["tournament.event"]);
    for (p, pts) in [("kim", 50), ("lee", 70)] {
        assert_eq!(submit(&app, "live", p, "a", pts).await.status, 200);
    }
    app.clock.set(END - 60_000);
    assert_eq!(run_jobs(&app, &rec).await, ["tournament.event"]);
    app.clock.set(END);
    assert_eq!(run_jobs(&app, &rec).await, ["tournament.end"]);

    let events = |got: &[Value]| -> Vec<String> {
        got.iter()
            .map(|v| v["event"].as_str().unwrap().to_owned())
            .collect()
    };
    let standings = json!([{"rank": 1, "player": "lee", "score": 70},
                           {"rank": 2, "player": "kim", "score": 50}]);
    for (ws, rank) in [
        (&mut spectator, Value::Null),
        (&mut kim, json!(2)),
        (&mut lee, json!(1)),
    ] {
        let got = tournament_messages_until_ended(ws).await;
        assert_eq!(events(&got), ["started", "ending_soon", "ended"], "{got:?}");
        assert_eq!(
            (got[0]["start_ms"].clone(), got[0]["end_ms"].clone()),
            (json!(START), json!(END))
        );
        let ended = &got[2];
        assert_eq!(ended["standings"], standings, "{ended}");
        assert_eq!(ended["total"], 2, "{ended}");
        assert_eq!(ended["rank"], rank, "{ended}");
    }
}

/// `GET /v1/boards/{b}/tournament` says where the tournament stands: `upcoming`, `running` (with
/// the server's clock, so the time left is `end_ms - server_time_ms`), `ended` with its freeze
/// time; `not_found` on a board without one.
#[tokio::test]
async fn the_tournament_state_is_readable() {
    let app = app().await;
    app.board(
        "cup",
        tourney(json!({"max_size": 5, "join_required": true})),
    )
    .await;
    let state = |v: &Value| {
        (
            v["state"].clone(),
            v["server_time_ms"].clone(),
            v["entrants"].clone(),
        )
    };
    let r = app.get("/v1/boards/cup/tournament").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(state(&r.body), (json!("upcoming"), json!(T0), json!(0)));
    assert_eq!(
        (
            r.body["start_ms"].clone(),
            r.body["end_ms"].clone(),
            r.body["max_size"].clone()
        ),
        (json!(START), json!(END), json!(5))
    );
    assert_eq!(join(&app, "cup", "kim").await.status, 200);
    app.clock.set(START + 1);
    let r = app.get("/v1/boards/cup/tournament").await;
    assert_eq!(
        state(&r.body),
        (json!("running"), json!(START + 1), json!(1))
    );
    assert!(r.body.get("ended_ms").is_none(), "{:?}", r.body);
    app.clock.set(END);
    run_jobs(&app, &Recorder::default()).await;
    let r = app.get("/v1/boards/cup/tournament").await;
    assert_eq!(state(&r.body), (json!("ended"), json!(END), json!(1)));
    assert_eq!(r.body["ended_ms"], END, "{:?}", r.body);

    app.board("plain", json!({})).await;
    let r = app.get("/v1/boards/plain/tournament").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "not_found"),
        "{:?}",
        r.body
    );
    let r = app.get("/v1/boards/nope/tournament").await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "unknown_board"),
        "{:?}",
        r.body
    );
}

/// A worker that crashes between the end job's two steps (the standings frozen, the rewards not
/// yet enqueued) leaves the job to run again: the retry freezes nothing new and rewards the
/// frozen standings, not the live board an admin changed in between.
#[tokio::test]
async fn an_end_job_retried_after_a_crash_past_the_freeze_rewards_the_frozen_standings() {
    let app = app().await;
    let mut cfg = tourney(json!({}));
    cfg["rewards_top"] = json!(2);
    app.board("cup", cfg).await;
    app.clock.set(START);
    for (p, pts) in [("ann", 30), ("ben", 20), ("cat", 10)] {
        assert_eq!(submit(&app, "cup", p, "a", pts).await.status, 200);
    }
    let rec = Recorder::default();
    run_jobs(&app, &rec).await;
    app.clock.set(END);
    // The freeze alone, as the job's first step would do before its worker dies.
    let (season, frozen) = app
        .state
        .store
        .end_tournament(&scorecast_tests::id("cup"), None)
        .await
        .unwrap();
    assert_eq!((season.as_str(), frozen), ("all", true));
    let r = app
        .call(Method::DELETE, "/admin/boards/cup/players/ann", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);

    let ran = run_jobs(&app, &rec).await;
    assert!(ran.contains(&"tournament.end".to_owned()), "{ran:?}");
    assert_eq!(rewards(&app, "cup").await, ["all:ann", "all:ben"]);
    let fin = app.get("/v1/boards/cup/final").await;
    assert_eq!(fin.body["total"], 3, "{:?}", fin.body);
}

/// The operator's list of entrants: every player who entered, in the order they entered, with
/// when, the attempts they made and the name their token carried; paged by offset and limit,
/// and a past occurrence by `season`.
#[tokio::test]
async fn the_entrants_are_listed_in_join_order_with_their_attempts() {
    let app = app().await;
    app.board("cup", tourney(json!({"join_required": true})))
        .await;
    for (i, p) in ["kim", "lee", "max"].into_iter().enumerate() {
        app.clock.set(T0 + i as i64 * 1000);
        assert_eq!(join(&app, "cup", p).await.status, 200);
    }
    app.clock.set(START);
    let mut kim = WsClient::connect(&app.ws_url()).await;
    kim.hello(&app.token("kim", Some("Kim K"))).await;
    for (id, pts) in [("k1", 3), ("k2", 4)] {
        let a = kim.submit(id, "cup", pts).await;
        assert_eq!(a["type"], "ack", "{a}");
    }
    let r = submit(&app, "cup", "max", "m1", 9).await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    let r = app
        .call(
            Method::GET,
            "/admin/boards/cup/tournament/entrants",
            None,
            true,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body,
        json!({"board": "cup", "season": "all", "total": 3, "entries": [
            {"player": "kim", "joined_ms": T0, "attempts": 2, "name": "Kim K"},
            {"player": "lee", "joined_ms": T0 + 1000, "attempts": 0},
            {"player": "max", "joined_ms": T0 + 2000, "attempts": 1},
        ]})
    );
    let page = app
        .call(
            Method::GET,
            "/admin/boards/cup/tournament/entrants?offset=1&limit=1",
            None,
            true,
        )
        .await;
    assert_eq!(page.body["total"], 3, "{:?}", page.body);
    assert_eq!(page.body["entries"], json!([r.body["entries"][1]]));

    // A new occurrence started by hand has no entrants yet; the past one stays readable.
    assert_eq!(app.rollover("cup", "second").await.status, 200);
    let now = app
        .call(
            Method::GET,
            "/admin/boards/cup/tournament/entrants",
            None,
            true,
        )
        .await;
    assert_eq!(
        (now.body["season"].clone(), now.body["total"].clone()),
        (json!("second"), json!(0)),
        "{:?}",
        now.body
    );
    assert_eq!(now.body["entries"], json!([]));
    let past = app
        .call(
            Method::GET,
            "/admin/boards/cup/tournament/entrants?season=all",
            None,
            true,
        )
        .await;
    assert_eq!(past.body, r.body);
}

/// Each bad request for the entrants is refused with its code and status, and changes no key.
#[tokio::test]
async fn bad_entrants_requests_are_refused_with_their_code_and_change_nothing() {
    let app = app().await;
    app.board("cup", tourney(json!({}))).await;
    app.board("plain", json!({})).await;
    assert_eq!(join(&app, "cup", "kim").await.status, 200);
    let before = app.dump().await;
    for (path, status, code) in [
        (
            "/admin/boards/cup/tournament/entrants?limit=0",
            400,
            "bad_request",
        ),
        (
            "/admin/boards/cup/tournament/entrants?limit=1001",
            400,
            "bad_request",
        ),
        (
            "/admin/boards/cup/tournament/entrants?offset=4294967296",
            400,
            "bad_request",
        ),
        (
            "/admin/boards/cup/tournament/entrants?limit=x",
            400,
            "bad_request",
        ),
        (
            "/admin/boards/cup/tournament/entrants?season=..",
            400,
            "invalid_id",
        ),
        (
            "/admin/boards/cup/tournament/entrants?page=2",
            400,
            "bad_request",
        ),
        (
            "/admin/boards/cup/tournament/entrants?season=nope",
            404,
            "unknown_season",
        ),
        ("/admin/boards/plain/tournament/entrants", 404, "not_found"),
        (
            "/admin/boards/nope/tournament/entrants",
            404,
            "unknown_board",
        ),
    ] {
        let r = app.call(Method::GET, path, None, true).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{path}: {:?}",
            r.body
        );
    }
    let r = app
        .call(
            Method::GET,
            "/admin/boards/cup/tournament/entrants",
            None,
            false,
        )
        .await;
    assert_eq!(r.status, 401, "{:?}", r.body);
    let token = app.token("kim", None);
    let r = app
        .call_as(
            Some(&token),
            Method::GET,
            "/admin/boards/cup/tournament/entrants",
            None,
        )
        .await;
    assert_eq!(
        r.status, 401,
        "a player token is no admin key: {:?}",
        r.body
    );
    assert_eq!(app.dump().await, before);
}
