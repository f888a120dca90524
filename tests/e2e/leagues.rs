//! Leagues: one request configures tiers of bucketed boards on one calendar; new players enter
//! the lowest tier and a player is refused (`wrong_tier`, nothing changed) anywhere but their
//! tier; at each season's end the `league.close` job moves each bucket's top `promote` up and
//! bottom `relegate` down, from the frozen standings, exactly once — run twice, or re-run after
//! a worker died between its steps, it ends in the same state — and tells each moved player.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use reqwest::Method;
use scorecast_server::jobs::{self, league, Notifier};
use scorecast_server::queue::Job;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::{id, spawn_app_with, Api, Resp, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;
/// 2025-03-11T00:00:00Z: the end of the daily season 2025-03-10.
const DAY_END: i64 = 1_741_651_200_000;
const DAY: i64 = 86_400_000;
const TIERS: [&str; 3] = ["bronze", "silver", "gold"];

/// Records the `notify` pushes: (player, kind, payload).
#[derive(Default)]
struct Recorder(Mutex<Vec<(String, String, Value)>>);

impl Notifier for Recorder {
    fn notify<'a>(
        &'a self,
        player: &'a scorecast_shared::Id,
        kind: &'a str,
        payload: &'a Value,
    ) -> futures_util::future::BoxFuture<'a, scorecast_server::error::AppResult<usize>> {
        self.0
            .lock()
            .unwrap()
            .push((player.to_string(), kind.to_owned(), payload.clone()));
        Box::pin(futures_util::future::ready(Ok(1)))
    }
}

impl Recorder {
    /// The `league` pushes so far: player -> (direction, to), in order.
    fn moves(&self) -> Vec<(String, String, String)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, k, _)| k == "league")
            .map(|(p, _, v)| {
                (
                    p.clone(),
                    v["direction"].as_str().unwrap().to_owned(),
                    v["to"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

async fn app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

/// The league of the tests: three tiers, buckets of 3, one up and one down, daily seasons.
fn weekly() -> Value {
    json!({"tiers": TIERS, "bucket_size": 3, "promote": 1, "relegate": 1, "reset": "daily",
           "board": {"op": "set", "submit_limit": null}})
}

async fn put_league(app: &TestApp, id: &str, body: Value) -> Resp {
    app.admin(Method::PUT, &format!("/admin/leagues/{id}"), body)
        .await
}

async fn submit(api: &Api, board: &str, player: &str, sid: &str, points: i64) -> Resp {
    api.admin(
        Method::POST,
        &format!("/admin/boards/{board}/players/{player}/score"),
        json!({"points": points, "id": sid}),
    )
    .await
}

/// Scores `(player, points)` on `board` in order; each must be accepted.
async fn scores(app: &TestApp, board: &str, sid: &str, rows: &[(&str, i64)]) {
    for (p, pts) in rows {
        let r = submit(app, board, p, sid, *pts).await;
        assert_eq!(r.status, 200, "{board}/{p}: {:?}", r.body);
    }
}

/// Runs every ready job; each must succeed.
async fn run_jobs(app: &TestApp, rec: &Recorder) -> Vec<String> {
    let mut ran = Vec::new();
    while let Some((job, ok)) = jobs::run_next(&app.state, rec).await.unwrap() {
        assert!(ok, "{job:?}");
        ran.push(job.id.to_string());
    }
    ran
}

/// Where each player plays, from Redis: the tier boards whose placements say the player plays
/// on them (`lb:{<tier>}:lg`); a player none names is on the lowest. Panics if two tiers claim
/// one player.
async fn tiers_of(app: &TestApp, players: &[&str]) -> BTreeMap<String, String> {
    let mut c = app.redis_conn().await;
    let mut out = BTreeMap::new();
    for p in players {
        let mut on = Vec::new();
        for t in TIERS {
            let v: Option<String> = redis::cmd("HGET")
                .arg(format!("lb:{{{t}}}:lg"))
                .arg(p)
                .query_async(&mut c)
                .await
                .unwrap();
            if v.as_deref() == Some(t) {
                on.push(t);
            }
        }
        assert!(on.len() <= 1, "{p} is placed on {on:?}");
        out.insert(
            p.to_string(),
            on.first().copied().unwrap_or("bronze").to_owned(),
        );
    }
    out
}

fn expect(rows: &[(&str, &str)]) -> BTreeMap<String, String> {
    rows.iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

fn close_job(season: &str, end_ms: i64) -> Job {
    let payload = league::LeagueClosePayload {
        league: "weekly".into(),
        season: season.into(),
        end_ms,
    };
    // Through text: a RawValue payload only deserialises from a string.
    let text = json!({
        "id": format!("league.close.weekly.{season}"), "kind": "league.close",
        "payload": payload, "priority": 0, "attempts": 1, "max_attempts": 5,
    })
    .to_string();
    serde_json::from_str(&text).unwrap()
}

/// One PUT configures the league: each tier board is bucketed, on the league's calendar, and
/// knows its tier; the season-end job is scheduled. Every bad league is `bad_request` (a board
/// of another league `conflict`) and changes no key.
#[tokio::test]
async fn one_put_configures_a_league_and_bad_ones_change_nothing() {
    let app = app().await;
    let r = put_league(&app, "weekly", weekly()).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["created"], true);
    let boards = app.get("/v1/boards").await;
    for (i, t) in TIERS.iter().enumerate() {
        let b = boards.body["boards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == *t)
            .unwrap_or_else(|| panic!("no tier board {t}"));
        assert_eq!(b["bucket_size"], 3);
        assert_eq!(b["reset"], "daily");
        assert_eq!(b["op"], "set");
        assert_eq!(
            b["league"],
            json!({"league": "weekly", "tier": i, "entry": "bronze"})
        );
    }
    let got = app
        .call(Method::GET, "/admin/leagues/weekly", None, true)
        .await;
    assert_eq!(got.body["tiers"], json!(TIERS));
    let jobs = app
        .call(
            Method::GET,
            "/admin/queues/scorecast/jobs?state=delayed",
            None,
            true,
        )
        .await;
    assert!(
        jobs.body
            .to_string()
            .contains("league.close.weekly.2025-03-10"),
        "{:?}",
        jobs.body
    );
    // Again: the same league, not created.
    let again = put_league(&app, "weekly", weekly()).await;
    assert_eq!(again.body["created"], false);

    app.board("lonely", json!({})).await;
    put_league(
        &app,
        "other",
        json!({"tiers": ["o1", "o2"], "bucket_size": 5, "promote": 1, "relegate": 1, "reset": "weekly"}),
    )
    .await;
    // A verified league: a new player's run on a tier above the lowest is refused too.
    let mut verified = weekly();
    verified["tiers"] = json!(["v0", "v1"]);
    verified["board"] = json!({"op": "best", "validator": "2048"});
    assert_eq!(put_league(&app, "verified", verified).await.status, 200);
    let st = &app.state.store;
    let e = st
        .start_run(&id("v1"), &id("newbie"), 60_000, 3)
        .await
        .unwrap_err();
    assert_eq!(e.code.as_str(), "wrong_tier", "{e:?}");
    st.start_run(&id("v0"), &id("newbie"), 60_000, 3)
        .await
        .unwrap();

    let before = app.dump().await;
    let mut bad = Vec::new();
    for (field, v) in [
        ("tiers", json!(["solo"])),
        ("tiers", json!(["x", "x"])),
        ("tiers", json!(["x", "bad id"])),
        ("bucket_size", json!(1)),
        ("bucket_size", json!(1001)),
        ("promote", json!(3)),
        ("reset", json!("never")),
        ("keep_seasons", json!(0)),
    ] {
        let mut body = weekly();
        body["tiers"] = json!(["n1", "n2"]);
        body[field] = v.clone();
        bad.push((format!("{field}={v}"), "new", body, 400));
    }
    let mut body = weekly();
    body["colour"] = json!("red");
    bad.push(("unknown field".into(), "new", body, 400));
    let mut body = weekly();
    body["tiers"] = json!(["lonely", "o2"]);
    bad.push(("a tier of another league".into(), "new", body, 409));
    let mut body = weekly();
    body["tiers"] = json!(["bronze", "silver"]);
    bad.push(("other tiers".into(), "weekly", body, 409));
    // A tier board is part of its league: it is not deleted.
    let r = app
        .call(Method::DELETE, "/admin/boards/silver", None, true)
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (409, "conflict"),
        "{:?}",
        r.body
    );
    assert_eq!(
        app.dump().await,
        before,
        "a refused tier deletion changed a key"
    );
    for (what, league, body, status) in bad {
        let r = put_league(&app, league, body).await;
        assert_eq!(r.status, status, "{what}: {:?}", r.body);
        assert_eq!(
            r.code(),
            if status == 400 {
                "bad_request"
            } else {
                "conflict"
            },
            "{what}"
        );
        assert_eq!(app.dump().await, before, "{what} changed a key");
    }
}

/// Three seasons of a league through its job: each bucket's first moves up and its last down;
/// the lowest tier's last and the top tier's first stay; each player is on exactly one tier
/// after each close; a player is refused anywhere else (`wrong_tier`, no key changed), a new
/// player anywhere but the lowest tier; `GET /v1/leagues/{l}/me` and the moves record say the
/// same; each moved player is told once. The job run a second time changes no key.
#[tokio::test]
async fn three_seasons_move_each_buckets_first_up_and_last_down_exactly_once() {
    let app = app().await;
    put_league(&app, "weekly", weekly()).await;
    let rec = Recorder::default();
    let all = ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];

    // Season 1 (2025-03-10): everyone starts on bronze; buckets [p1 p2 p3] [p4 p5 p6] [p7 p8 p9].
    let rows: Vec<(&str, i64)> = all.iter().zip(1..).map(|(p, i)| (*p, i * 10)).collect();
    scores(&app, "bronze", "d1", &rows).await;
    let before = app.dump().await;
    for (board, player) in [("silver", "p1"), ("gold", "newbie")] {
        let r = submit(&app, board, player, "x", 1).await;
        assert_eq!(r.status, 403, "{board}/{player}: {:?}", r.body);
        assert_eq!(r.code(), "wrong_tier");
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("new players enter on bronze"),
            "{:?}",
            r.body
        );
    }
    assert_eq!(
        app.dump().await,
        before,
        "a wrong_tier refusal changed a key"
    );

    app.clock.set(DAY_END);
    // p3 plays the new season on bronze before the close job ran: accepted there for now.
    assert_eq!(submit(&app, "bronze", "p3", "early", 5).await.status, 200);
    let ran = run_jobs(&app, &rec).await;
    assert!(
        ran.contains(&"league.close.weekly.2025-03-10".to_owned()),
        "{ran:?}"
    );
    // Moved up, p3 lost that early entry on bronze (score, bucket place, bucket entry).
    let mut c = app.redis_conn().await;
    for (cmd, key) in [
        ("ZSCORE", "lb:{bronze}:s:2025-03-11"),
        ("HGET", "lb:{bronze}:bk:2025-03-11"),
        ("ZSCORE", "lb:{bronze}:bk:2025-03-11:1"),
    ] {
        let v: Option<String> = redis::cmd(cmd)
            .arg(key)
            .arg("p3")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(v, None, "{key} still holds p3");
    }
    let moves = app
        .call(
            Method::GET,
            "/admin/leagues/weekly/moves?season=2025-03-10",
            None,
            true,
        )
        .await;
    assert_eq!(moves.status, 200, "{:?}", moves.body);
    let listed: Vec<(String, String, u64, u64)> = moves.body["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["player"].as_str().unwrap().to_owned(),
                m["direction"].as_str().unwrap().to_owned(),
                m["bucket"].as_u64().unwrap(),
                m["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    let up = |p: &str, b| (p.to_owned(), "up".to_owned(), b, 1);
    assert_eq!(listed, [up("p3", 1), up("p6", 2), up("p9", 3)]);
    assert!(
        moves.body["closed_ms"].as_i64() >= moves.body["computed_ms"].as_i64(),
        "closed once computed: {:?}",
        moves.body
    );
    // Without `season`: the last season that ended.
    let last = app
        .call(Method::GET, "/admin/leagues/weekly/moves", None, true)
        .await;
    assert_eq!(last.status, 200, "{:?}", last.body);
    assert_eq!(last.body, moves.body);
    assert_eq!(
        tiers_of(&app, &all).await,
        expect(&[
            ("p1", "bronze"),
            ("p2", "bronze"),
            ("p3", "silver"),
            ("p4", "bronze"),
            ("p5", "bronze"),
            ("p6", "silver"),
            ("p7", "bronze"),
            ("p8", "bronze"),
            ("p9", "silver"),
        ])
    );

    // Season 2 (2025-03-11): p3 is refused on bronze now, and nothing changes.
    app.clock.set(DAY_END + 3_600_000);
    let before = app.dump().await;
    let r = submit(&app, "bronze", "p3", "d2", 1).await;
    assert_eq!(r.code(), "wrong_tier", "{:?}", r.body);
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("plays on silver"));
    assert_eq!(
        app.dump().await,
        before,
        "a wrong_tier refusal changed a key"
    );
    let me = app
        .call_as(
            Some(&app.token("p3", None)),
            Method::GET,
            "/v1/leagues/weekly/me",
            None,
        )
        .await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(
        (me.body["tier"].clone(), me.body["board"].clone()),
        (json!(1), json!("silver"))
    );
    assert!(
        me.body.get("bucket").is_none(),
        "no score yet this season: {:?}",
        me.body
    );
    scores(&app, "silver", "d2", &[("p3", 10), ("p6", 20), ("p9", 30)]).await;
    scores(
        &app,
        "bronze",
        "d2",
        &[
            ("p1", 5),
            ("p2", 6),
            ("p4", 4),
            ("p5", 7),
            ("p7", 9),
            ("p8", 8),
        ],
    )
    .await;
    let me = app
        .call_as(
            Some(&app.token("p6", None)),
            Method::GET,
            "/v1/leagues/weekly/me",
            None,
        )
        .await;
    assert_eq!(
        (
            me.body["tier"].clone(),
            me.body["bucket"].clone(),
            me.body["rank"].clone()
        ),
        (json!(1), json!(1), json!(2)),
        "{:?}",
        me.body
    );
    app.clock.set(DAY_END + DAY);
    run_jobs(&app, &rec).await;
    assert_eq!(
        tiers_of(&app, &all).await,
        expect(&[
            ("p1", "bronze"),
            ("p2", "silver"),
            ("p3", "bronze"),
            ("p4", "bronze"),
            ("p5", "bronze"),
            ("p6", "silver"),
            ("p7", "silver"),
            ("p8", "bronze"),
            ("p9", "gold"),
        ])
    );

    // Season 3 (2025-03-12): p9 alone on gold stays (the top tier's first); p1 and p5, last of
    // their bronze buckets, stay (the lowest tier's last).
    app.clock.set(DAY_END + DAY + 3_600_000);
    scores(&app, "gold", "d3", &[("p9", 1)]).await;
    scores(&app, "silver", "d3", &[("p6", 1), ("p2", 3), ("p7", 2)]).await;
    scores(
        &app,
        "bronze",
        "d3",
        &[("p1", 10), ("p3", 20), ("p4", 30), ("p5", 1), ("p8", 2)],
    )
    .await;
    app.clock.set(DAY_END + 2 * DAY);
    run_jobs(&app, &rec).await;
    let after = expect(&[
        ("p1", "bronze"),
        ("p2", "gold"),
        ("p3", "bronze"),
        ("p4", "silver"),
        ("p5", "bronze"),
        ("p6", "bronze"),
        ("p7", "silver"),
        ("p8", "silver"),
        ("p9", "gold"),
    ]);
    assert_eq!(tiers_of(&app, &all).await, after);
    for (p, t) in &after {
        let me = app
            .call_as(
                Some(&app.token(p, None)),
                Method::GET,
                "/v1/leagues/weekly/me",
                None,
            )
            .await;
        assert_eq!(me.body["board"], t.as_str(), "{p}: {:?}", me.body);
    }

    // Each move told once, in the order made.
    let told = rec.moves();
    let s = |p: &str, d: &str, t: &str| (p.to_owned(), d.to_owned(), t.to_owned());
    assert_eq!(
        told,
        [
            s("p3", "up", "silver"),
            s("p6", "up", "silver"),
            s("p9", "up", "silver"),
            s("p2", "up", "silver"),
            s("p7", "up", "silver"),
            s("p9", "up", "gold"),
            s("p3", "down", "bronze"),
            s("p4", "up", "silver"),
            s("p8", "up", "silver"),
            s("p2", "up", "gold"),
            s("p6", "down", "bronze"),
        ]
    );

    // The last close runs again (a redelivery): no key changes, nobody is told twice.
    let before = app.dump().await;
    jobs::handle(
        &app.state,
        &rec,
        &close_job("2025-03-12", DAY_END + 2 * DAY),
    )
    .await
    .unwrap();
    run_jobs(&app, &rec).await;
    let after: BTreeMap<_, _> = app.dump().await.into_iter().collect();
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(k) != Some(v))
        .map(|(k, _)| k)
        .chain(
            after
                .keys()
                .filter(|k| !before.iter().any(|(b, _)| b == *k)),
        )
        .collect();
    assert!(changed.is_empty(), "a second run changed {changed:?}");
    assert_eq!(rec.moves(), told);
}

/// A worker that dies after computing the moves and applying them to one tier only leaves the
/// job to run again: the retry applies the stored moves (not the standings a ban changed since)
/// to the other tiers, and ends where one clean run ends; each moved player is told once.
#[tokio::test]
async fn a_close_retried_after_a_crash_between_tiers_ends_as_one_clean_run() {
    let app = app().await;
    put_league(&app, "weekly", weekly()).await;
    let rec = Recorder::default();
    let all = ["p1", "p2", "p3", "p4", "p5", "p6"];
    let rows: Vec<(&str, i64)> = all.iter().zip(1..).map(|(p, i)| (*p, i * 10)).collect();
    scores(&app, "bronze", "d1", &rows).await;
    app.clock.set(DAY_END);
    // The job's first steps, as its worker would do them before dying: the moves recorded,
    // the lowest tier applied, silver not.
    let l = id("weekly");
    let cfg = app.state.store.league(&l).await.unwrap();
    let recorded = league::record_moves(&app.state, &l, &cfg, "2025-03-10")
        .await
        .unwrap();
    let applied = league::apply_tier(&app.state, &cfg, &recorded, 0, "2025-03-11")
        .await
        .unwrap();
    assert!(applied);
    assert_eq!(recorded.moves.len(), 2, "{recorded:?}");
    // Half-way: p3 has left bronze, silver does not know yet.
    assert_eq!(
        submit(&app, "bronze", "p3", "x", 1).await.code(),
        "wrong_tier"
    );
    assert_eq!(
        submit(&app, "silver", "p3", "x", 1).await.code(),
        "wrong_tier"
    );
    let r = app
        .call(
            Method::GET,
            "/admin/leagues/weekly/moves?season=2025-03-10",
            None,
            true,
        )
        .await;
    assert!(
        r.body.get("closed_ms").is_none(),
        "not closed yet: {:?}",
        r.body
    );
    // Meanwhile a ban on bronze holds p3's entries, the ended season's too: standings computed
    // now would promote p2 instead.
    let r = app
        .admin(Method::PUT, "/admin/bans/p3", json!({"board": "bronze"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    let ran = run_jobs(&app, &rec).await;
    assert!(
        ran.contains(&"league.close.weekly.2025-03-10".to_owned()),
        "{ran:?}"
    );
    assert_eq!(
        tiers_of(&app, &all).await,
        expect(&[
            ("p1", "bronze"),
            ("p2", "bronze"),
            ("p3", "silver"),
            ("p4", "bronze"),
            ("p5", "bronze"),
            ("p6", "silver"),
        ])
    );
    let stored = app
        .state
        .store
        .moves(&l, "2025-03-10")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.moves, recorded.moves,
        "the retry applied the recorded moves"
    );
    assert!(stored.closed_ms.is_some());
    let told: BTreeSet<String> = rec.moves().into_iter().map(|(p, _, _)| p).collect();
    assert_eq!(told, BTreeSet::from(["p3".to_owned(), "p6".to_owned()]));
    assert_eq!(rec.moves().len(), 2, "told once each");
    // p3 plays on silver now.
    let r = submit(&app, "silver", "p3", "s", 5).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// A moved player is told live: when the season's close runs (with the hub as the notifier, as
/// the job workers run it), the player's open WebSocket gets `notify` kind `league` with the
/// move; a player who stayed gets none.
#[tokio::test]
async fn a_moved_player_is_told_on_their_websocket() {
    use scorecast_tests::ws::{Incoming, WsClient};
    let app = app().await;
    put_league(&app, "weekly", weekly()).await;
    scores(&app, "bronze", "d1", &[("p1", 10), ("p2", 20), ("p3", 30)]).await;
    let mut sessions = Vec::new();
    for p in ["p3", "p1"] {
        let mut ws = WsClient::connect(&app.ws_url()).await;
        assert_eq!(ws.hello(&app.token(p, None)).await["type"], "welcome");
        sessions.push(ws);
    }
    app.clock.set(DAY_END);
    while let Some((job, ok)) = jobs::run_next(&app.state, &app.state.hub).await.unwrap() {
        assert!(ok, "{job:?}");
    }
    let told = sessions[0]
        .recv_until(scorecast_tests::EVENTUALLY, |v| v["type"] == "notify")
        .await;
    assert_eq!(told["kind"], "league");
    let p = &told["payload"];
    assert_eq!(
        (
            p["direction"].clone(),
            p["from"].clone(),
            p["to"].clone(),
            p["to_tier"].clone()
        ),
        (json!("up"), json!("bronze"), json!("silver"), json!(1)),
        "{told}"
    );
    assert_eq!(
        (p["season"].clone(), p["rank"].clone()),
        (json!("2025-03-10"), json!(1))
    );
    // p1 stayed (the lowest tier's last): the jobs are done, so nothing is on its way to them.
    if let Some(Incoming::Json(v)) = sessions[1]
        .next_within(std::time::Duration::from_millis(300))
        .await
    {
        panic!("p1 was sent {v}");
    }
}

/// A moved player's entry on the tier they left (scored in the new season before the close ran)
/// is removed by the close, and the old tier's live views hear of it: a rival watching `top`
/// and `me` of their shared bucket gets the table without the moved player, and moves up.
#[tokio::test]
async fn a_moved_players_early_entry_leaves_the_old_tiers_live_views() {
    use scorecast_tests::ws::WsClient;
    let app = app().await;
    put_league(&app, "weekly", weekly()).await;
    scores(&app, "bronze", "d1", &[("p1", 10), ("p2", 20), ("p3", 30)]).await;
    app.clock.set(DAY_END);
    // The season's other jobs run (their events refresh every view); the close waits.
    let close = id("league.close.weekly.2025-03-10");
    app.state
        .queues
        .get(&id("scorecast"))
        .delete(&close)
        .await
        .unwrap();
    run_jobs(&app, &Recorder::default()).await;
    // The new season, before its close ran: p3 (moving up) and p1 (staying) share a bucket.
    scores(&app, "bronze", "early", &[("p3", 50), ("p1", 40)]).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token("p1", None)).await["type"], "welcome");
    let top = ws.subscribe("bronze", "top", json!({"limit": 10})).await;
    let players = |v: &Value| -> Vec<String> {
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["player"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(players(&top), ["p3", "p1"], "{top}");
    let me = ws.subscribe("bronze", "me", json!({})).await;
    assert_eq!(me["rank"], 2, "{me}");
    jobs::handle(
        &app.state,
        &Recorder::default(),
        &close_job("2025-03-10", DAY_END),
    )
    .await
    .unwrap();
    let top = ws
        .recv_until(scorecast_tests::EVENTUALLY, |v| v["type"] == "top")
        .await;
    assert_eq!(players(&top), ["p1"], "{top}");
    let me = ws
        .recv_until(scorecast_tests::EVENTUALLY, |v| v["type"] == "rank")
        .await;
    assert_eq!(
        (me["rank"].clone(), me["score"].clone()),
        (json!(1), json!(40)),
        "{me}"
    );
}

/// The same close run by two instances at once (a redelivery racing the first delivery): the
/// moves are stored once, applied once per tier, the season closed once, and each moved player
/// gets one `notify` job.
#[tokio::test]
async fn two_instances_racing_the_same_close_move_each_player_once() {
    let app = app().await;
    let second = app.second_instance_with(|s| s.workers = false).await;
    put_league(&app, "weekly", weekly()).await;
    let all: Vec<String> = (1..=30).map(|i| format!("p{i}")).collect();
    let rows: Vec<(&str, i64)> = all.iter().zip(1..).map(|(p, i)| (p.as_str(), i)).collect();
    scores(&app, "bronze", "d1", &rows).await;
    app.clock.set(DAY_END);
    let job = close_job("2025-03-10", DAY_END);
    let rec = Recorder::default();
    let (x, y) = tokio::join!(
        jobs::handle(&app.state, &rec, &job),
        jobs::handle(&second.state, &rec, &job)
    );
    x.unwrap();
    y.unwrap();
    // Buckets of 3, one up each: the first of each of the 10 buckets.
    let ups: Vec<String> = (1..=10).map(|b| format!("p{}", 3 * b)).collect();
    let names: Vec<&str> = all.iter().map(String::as_str).collect();
    let placed = tiers_of(&app, &names).await;
    for (p, t) in &placed {
        let want = if ups.contains(p) { "silver" } else { "bronze" };
        assert_eq!(t, want, "{p}");
    }
    let q = app.state.queues.get(&id("scorecast"));
    let listed = q
        .list(scorecast_server::queue::JobState::Ready, 0, 1000)
        .await
        .unwrap();
    let mut told: Vec<String> = listed
        .1
        .iter()
        .filter(|l| l.job.kind == "notify")
        .map(|l| {
            let p: Value = l.job.payload_as().unwrap();
            p["player"].as_str().unwrap().to_owned()
        })
        .collect();
    told.sort();
    let mut want = ups.clone();
    want.sort();
    assert_eq!(told, want, "one notify job per moved player");
}
