//! Scorecast's own jobs: season rollover at each calendar season's end,
//! reward grants for the finished season's top players (once, even when a job runs twice),
//! and notify messages through the `Notifier` hook. Time is injected (Clock::Manual).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use redis::AsyncCommands;
use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::jobs::{self, Notifier, RewardPayload, RolloverPayload};
use scorecast_server::queue::Job;
use scorecast_shared::{BoardConfig, Id, Reset};
use scorecast_tests::{id, spawn_app_with, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z (a Monday).
const T0: i64 = 1_741_608_000_000;
/// 2025-03-11T00:00:00Z: the end of the daily season 2025-03-10.
const DAY_END: i64 = 1_741_651_200_000;
/// 2025-03-12T00:00:00Z.
const NEXT_END: i64 = DAY_END + 86_400_000;

/// Records what would be pushed to players' WebSockets.
#[derive(Default)]
struct Recorder(Mutex<Vec<(String, String, Value)>>);

impl Notifier for Recorder {
    fn notify<'a>(
        &'a self,
        player: &'a Id,
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

async fn manual_app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

/// Season rollover end to end with injected time: the new season key is active, the old one
/// stays readable, reward jobs for the top N are enqueued in rank order, each reward is
/// granted once even when its job (or the rollover job) runs twice, one notify per grant,
/// and the next rollover is scheduled.
#[tokio::test]
async fn season_rollover_end_to_end() {
    // Arrange: a daily board with rewards for the top 3, scores in the 2025-03-10 season.
    let app = manual_app().await;
    app.board("arena", json!({"reset": "daily", "rewards_top": 3}))
        .await;
    let q = jobs::queue(&app.state);
    let counts = q.counts().await.unwrap();
    assert_eq!(
        (counts.ready, counts.delayed),
        (0, 1),
        "the board's rollover is scheduled"
    );
    for (player, points) in [
        ("alice", 50),
        ("bob", 80),
        ("carol", 70),
        ("dave", 10),
        ("erin", 60),
    ] {
        let r = app.score("arena", player, points).await;
        assert_eq!(r["season"], "2025-03-10");
    }
    let rec = Recorder::default();
    assert!(
        jobs::run_next(&app.state, &rec).await.unwrap().is_none(),
        "not due before the season ends"
    );

    // Act: the season ends; the rollover job runs.
    app.clock.set(DAY_END);
    let (job, ok) = jobs::run_next(&app.state, &rec)
        .await
        .unwrap()
        .expect("the rollover is due");
    let generation = app
        .state
        .store
        .board_generation(&id("arena"))
        .await
        .unwrap();
    assert_eq!(generation.len(), 16, "a created board has a generation");
    assert_eq!(
        (job.kind.as_str(), job.id.to_string(), ok),
        (
            "season.rollover",
            format!("rollover.arena.2025-03-10.{generation}"),
            true
        )
    );

    // The new season is active; the old one is readable.
    let r = app.score("arena", "alice", 5).await;
    assert_eq!(r["season"], "2025-03-11");
    let old = app.get("/v1/boards/arena/top?season=2025-03-10").await;
    assert_eq!(old.body["entries"][0]["player"], "bob");
    assert_eq!(old.body["total"], 5);
    let new = app.get("/v1/boards/arena/top").await;
    assert_eq!(
        (new.body["season"].as_str(), new.body["total"].as_u64()),
        (Some("2025-03-11"), Some(1))
    );

    // Reward jobs for the top 3, claimed in rank order; the next rollover is delayed.
    let counts = q.counts().await.unwrap();
    assert_eq!((counts.ready, counts.delayed), (3, 1));
    let mut claimed = Vec::new();
    while let Some(c) = q.claim(Duration::from_secs(30)).await.unwrap() {
        claimed.push(c);
    }
    let order: Vec<(String, u64, u8)> = claimed
        .iter()
        .map(|c| {
            let p: RewardPayload = c.job.payload_as().unwrap();
            (p.player, p.rank, c.job.priority)
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("bob".into(), 1, 0),
            ("carol".into(), 2, 1),
            ("erin".into(), 3, 2)
        ]
    );

    // Each reward job runs twice (a redelivery), then is acked: granted once, notified once.
    for c in &claimed {
        jobs::handle(&app.state, &rec, &c.job).await.unwrap();
        jobs::handle(&app.state, &rec, &c.job).await.unwrap();
        q.ack(&id(&c.job.id), &c.lease.token).await.unwrap();
    }
    let grants = rewards(&app, "arena").await;
    assert_eq!(grants.len(), 3);
    assert_eq!(grants["2025-03-10:bob"]["rank"], 1);
    assert_eq!(grants["2025-03-10:erin"]["score"], 60);
    assert_eq!(
        q.counts().await.unwrap().ready,
        3,
        "one notify job per grant"
    );
    while jobs::run_next(&app.state, &rec).await.unwrap().is_some() {}
    let sent = rec.0.lock().unwrap().clone();
    let players: Vec<&str> = sent.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(players, ["bob", "carol", "erin"]);
    assert!(sent
        .iter()
        .all(|(_, kind, payload)| kind == "reward" && payload["season"] == "2025-03-10"));

    // The rollover job runs a second time: rewards are enqueued again but granted nothing new.
    let again = RolloverPayload {
        board: "arena".into(),
        season: "2025-03-10".into(),
        end_ms: DAY_END,
        generation: generation.clone(),
    };
    jobs::handle(&app.state, &rec, &job_of("season.rollover", &again))
        .await
        .unwrap();
    while jobs::run_next(&app.state, &rec).await.unwrap().is_some() {}
    assert_eq!(
        rewards(&app, "arena").await,
        grants,
        "granted once, records unchanged"
    );
    assert_eq!(rec.0.lock().unwrap().len(), 3, "no second notify");

    // Only the next rollover remains, due at the end of 2025-03-11.
    let counts = q.counts().await.unwrap();
    assert_eq!(
        (counts.ready, counts.delayed, counts.processing, counts.dead),
        (0, 1, 0, 0)
    );
    app.clock.set(NEXT_END);
    let (job, _) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!(job.id, format!("rollover.arena.2025-03-11.{generation}"));
    // Only alice scored that season: one reward.
    let (job, _) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!(job.payload_as::<RewardPayload>().unwrap().player, "alice");
}

/// Calendar boards from the configuration get their rollover scheduled at start-up, once
/// (ISO week names); a `never` board gets none; a season nobody scored in rewards nobody.
#[tokio::test]
async fn rollovers_are_scheduled_at_start_up_for_calendar_boards() {
    let app = spawn_app_with(
        |s| {
            s.workers = false;
            let weekly = BoardConfig {
                reset: Reset::Weekly,
                rewards_top: 2,
                ..Default::default()
            };
            s.boards.insert("weekly".into(), weekly);
            s.boards.insert("forever".into(), BoardConfig::default());
        },
        Clock::manual(T0),
    )
    .await;
    let q = jobs::queue(&app.state);
    assert_eq!(q.counts().await.unwrap().delayed, 1);
    assert_eq!(
        jobs::schedule_rollovers(&app.state).await.unwrap(),
        0,
        "idempotent"
    );
    // Monday 2025-03-17 00:00 ends ISO week 2025-W11.
    app.clock.set(T0 + 7 * 86_400_000 - 12 * 3_600_000);
    let rec = Recorder::default();
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    let generation = app
        .state
        .store
        .board_generation(&id("weekly"))
        .await
        .unwrap();
    assert_eq!(
        (job.id.to_string(), ok),
        (format!("rollover.weekly.2025-W11.{generation}"), true)
    );
    let counts = q.counts().await.unwrap();
    assert_eq!(
        (counts.ready, counts.delayed),
        (0, 1),
        "no scores, no rewards; next week scheduled"
    );
}

/// With the workers running (real clock), the job workers pick up Scorecast's jobs by
/// themselves: a reward.grant job ends as a grant record, and a job of unknown kind is retried
/// with backoff rather than lost.
#[tokio::test]
async fn the_job_workers_run_in_the_background() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    app.board("b", json!({})).await;
    let q = jobs::queue(&app.state);
    let reward = RewardPayload {
        board: "b".into(),
        season: "all".into(),
        player: "zoe".into(),
        rank: 1,
        score: 9,
        generation: app.state.store.board_generation(&id("b")).await.unwrap(),
    };
    q.enqueue(scorecast_server::queue::NewJob::new(&id("reward.grant"), &reward).unwrap())
        .await
        .unwrap();
    q.enqueue(
        scorecast_server::queue::NewJob::new(&id("mystery"), &json!({}))
            .unwrap()
            .id(id("m")),
    )
    .await
    .unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let c = q.counts().await.unwrap();
        if rewards(&app, "b").await.len() == 1
            && c.ready == 0
            && c.processing == 0
            && c.delayed == 1
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "workers did not process the jobs: {c:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = app
        .call(Method::GET, "/admin/queues/scorecast/dead", None, true)
        .await;
    assert_eq!(
        r.body["total"], 0,
        "the failed job backs off, it is not dead yet"
    );
}

fn job_of(kind: &str, payload: &impl serde::Serialize) -> Job {
    // Through text: a RawValue payload only deserialises from a string.
    let text = json!({
        "id": "manual",
        "kind": kind,
        "payload": payload,
        "priority": 0,
        "attempts": 1,
        "max_attempts": 5,
    })
    .to_string();
    serde_json::from_str(&text).unwrap()
}

async fn rewards(app: &TestApp, board: &str) -> HashMap<String, Value> {
    let mut c = app.redis_conn().await;
    let raw: HashMap<String, String> = c.hgetall(format!("lb:{{{board}}}:rewards")).await.unwrap();
    raw.into_iter()
        .map(|(k, v)| (k, serde_json::from_str(&v).unwrap()))
        .collect()
}

/// A calendar boundary changes the current season with no submission: the rollover job tells
/// every instance, so an open `top` view switches to the new (empty) season at once.
#[tokio::test]
async fn open_views_follow_the_calendar_boundary() {
    let app = manual_app().await;
    app.board("clock", json!({"reset": "daily"})).await;
    app.score("clock", "alice", 50).await;
    let mut spectator = scorecast_tests::ws::WsClient::connect(&app.ws_url()).await;
    let snap = spectator.subscribe("clock", "top", json!({})).await;
    assert_eq!(
        (snap["season"].as_str(), snap["total"].as_u64()),
        (Some("2025-03-10"), Some(1))
    );

    app.clock.set(DAY_END);
    let rec = Recorder::default();
    let (job, ok) = jobs::run_next(&app.state, &rec)
        .await
        .unwrap()
        .expect("the rollover is due");
    assert_eq!((job.kind.as_str(), ok), ("season.rollover", true));

    let pushed = spectator
        .recv_until(Duration::from_secs(2), |v| {
            v["type"] == "top" && v["season"] == "2025-03-11"
        })
        .await;
    assert_eq!(pushed["total"], 0);
    assert!(pushed["seq"].as_u64() > snap["seq"].as_u64());
}

/// Ending a season of a `never` board by hand hands out its rewards too, once.
#[tokio::test]
async fn manual_rollover_rewards_the_finished_season() {
    let app = manual_app().await;
    app.board("cup", json!({"rewards_top": 2})).await;
    for (player, points) in [("ann", 30), ("ben", 20), ("cat", 10)] {
        app.score("cup", player, points).await;
    }
    let r = app.rollover("cup", "cup-2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    let rec = Recorder::default();
    let mut ran = Vec::new();
    while let Some((job, ok)) = jobs::run_next(&app.state, &rec).await.unwrap() {
        assert!(ok, "{job:?}");
        ran.push(job.kind);
    }
    ran.sort();
    assert_eq!(
        ran,
        [
            "notify",
            "notify",
            "reward.grant",
            "reward.grant",
            "season.rollover"
        ]
    );
    let grants = rewards(&app, "cup").await;
    let mut who: Vec<_> = grants.keys().cloned().collect();
    who.sort();
    assert_eq!(who, ["all:ann", "all:ben"]);
    // A second rollover of the same season would be the same job: nothing is granted twice.
    jobs::season_ended(&app.state, &id("cup"), "all", 0)
        .await
        .unwrap();
    while jobs::run_next(&app.state, &rec).await.unwrap().is_some() {}
    assert_eq!(rewards(&app, "cup").await.len(), 2);
}

/// The ids of the rewards of `board`, sorted, with each record's score.
async fn granted(app: &TestApp, board: &str) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = rewards(app, board)
        .await
        .into_iter()
        .map(|(k, v)| (k, v["score"].as_i64().unwrap()))
        .collect();
    out.sort();
    out
}

/// Deleting a board stops its jobs, and a board created again with the same id starts clean:
/// a `reward.grant` of the deleted board that runs after the deletion writes no key (not even
/// its rewards hash), one that runs after the re-creation grants nothing, and the new board's
/// winners get their own rewards (with their own scores) and notifications; the old board's
/// `season.rollover` neither hands out rewards nor schedules another rollover, while the new
/// board gets its own rollover for the same season (not blocked by the old job's id).
#[tokio::test]
async fn deleting_a_board_stops_its_jobs_and_recreating_it_starts_clean() {
    let app = manual_app().await;
    let q = jobs::queue(&app.state);
    let rec = Recorder::default();
    let cup = json!({"rewards_top": 2});

    // A `never` board's season ends by hand: its reward jobs are queued, not yet run.
    app.board("cup", cup.clone()).await;
    app.score("cup", "ann", 30).await;
    app.score("cup", "ben", 20).await;
    let r = app.rollover("cup", "cup-2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), ok), ("season.rollover", true));
    assert_eq!(q.counts().await.unwrap().ready, 2, "two reward jobs queued");

    // The board is deleted; one stale reward job runs: nothing of the board comes back.
    let d = app.delete_board("cup").await;
    assert_eq!(d.status, 204, "{:?}", d.body);
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), ok), ("reward.grant", true));
    let mut c = app.redis_conn().await;
    let keys: Vec<String> = c.keys("*{cup}*").await.unwrap();
    assert_eq!(keys, Vec::<String>::new(), "a stale grant wrote keys");

    // Created again: new winners, the same season name `all`.
    app.board("cup", cup).await;
    app.score("cup", "ben", 99).await;
    app.score("cup", "cat", 50).await;
    let r = app.rollover("cup", "cup-2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // The other stale reward (ben, 20) and the new board's jobs all run.
    let mut runs = 0;
    while let Some((job, ok)) = jobs::run_next(&app.state, &rec).await.unwrap() {
        assert!(ok, "{job:?}");
        runs += 1;
        assert!(runs < 50, "jobs keep coming");
    }
    assert_eq!(
        granted(&app, "cup").await,
        vec![("all:ben".to_owned(), 99), ("all:cat".to_owned(), 50)],
        "the new board's winners, with their new scores, and nothing of the old board"
    );
    let mut notified: Vec<(String, i64)> = rec
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _, payload)| (p.clone(), payload["score"].as_i64().unwrap()))
        .collect();
    notified.sort();
    assert_eq!(
        notified,
        vec![("ben".to_owned(), 99), ("cat".to_owned(), 50)],
        "one notification per real grant"
    );

    // A calendar board: its rollover is scheduled; deleted and created again in the same season.
    app.board("day", json!({"reset": "daily", "rewards_top": 1}))
        .await;
    app.score("day", "old", 500).await;
    let d = app.delete_board("day").await;
    assert_eq!(d.status, 204, "{:?}", d.body);
    app.board("day", json!({"reset": "daily", "rewards_top": 1}))
        .await;
    app.score("day", "new", 5).await;
    assert_eq!(
        q.counts().await.unwrap().delayed,
        2,
        "the new board's rollover is scheduled beside the old board's"
    );
    app.clock.set(DAY_END);
    let mut kinds = Vec::new();
    while let Some((job, ok)) = jobs::run_next(&app.state, &rec).await.unwrap() {
        assert!(ok, "{job:?}");
        kinds.push(job.kind);
        assert!(kinds.len() < 50, "jobs keep coming");
    }
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "notify",
            "reward.grant",
            "season.rollover",
            "season.rollover"
        ],
        "the old rollover ran and did nothing; the new one rewarded its one winner"
    );
    assert_eq!(
        granted(&app, "day").await,
        vec![("2025-03-10:new".to_owned(), 5)]
    );
    let generation = app.state.store.board_generation(&id("day")).await.unwrap();
    let delayed: Vec<String> = c.zrange("q:{scorecast}:delayed", 0, -1).await.unwrap();
    assert_eq!(
        delayed,
        vec![format!("rollover.day.2025-03-11.{generation}")],
        "only the new board schedules its next rollover"
    );
}

/// A `ban.lift` of a deleted board that runs after the deletion writes nothing; one that runs
/// after the board was created again lifts nothing there (its `until_ms` is not the new ban's),
/// and the new board's ban is lifted by its own job at its own time.
#[tokio::test]
async fn a_deleted_boards_ban_lift_leaves_the_new_board_alone() {
    let app = manual_app().await;
    let rec = Recorder::default();
    let ban = |player: &'static str, until: i64| {
        let app = &app;
        async move {
            let body = json!({"board": "b", "reason": "test", "until_ms": until});
            let r = app
                .admin(Method::PUT, &format!("/admin/bans/{player}"), body)
                .await;
            assert_eq!(r.status, 200, "{:?}", r.body);
        }
    };
    let scores = |player: &'static str| {
        let app = &app;
        async move {
            app.admin(
                Method::POST,
                &format!("/admin/boards/b/players/{player}/score"),
                json!({"points": 1}),
            )
            .await
            .status
            .as_u16()
        }
    };
    let (first_until, second_until) = (T0 + 3_600_000, T0 + 7_200_000);

    // A ban on a board that is then deleted: its lift runs on no board and writes nothing.
    app.board("b", json!({})).await;
    ban("gone", first_until).await;
    let d = app.delete_board("b").await;
    assert_eq!(d.status, 204);
    app.clock.set(first_until);
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), ok), ("ban.lift", true));
    let mut c = app.redis_conn().await;
    let keys: Vec<String> = c.keys("*{b}*").await.unwrap();
    assert_eq!(keys, Vec::<String>::new(), "a stale lift wrote keys");

    // Again, but the board comes back before the old lift is due, with a longer ban.
    app.clock.set(T0);
    app.board("b", json!({})).await;
    ban("eve", first_until).await;
    let d = app.delete_board("b").await;
    assert_eq!(d.status, 204);
    app.board("b", json!({})).await;
    ban("eve", second_until).await;
    assert_eq!(scores("eve").await, 403);

    app.clock.set(first_until);
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), ok), ("ban.lift", true));
    assert_eq!(
        scores("eve").await,
        403,
        "the old board's lift lifted the new ban"
    );
    assert!(jobs::run_next(&app.state, &rec).await.unwrap().is_none());

    app.clock.set(second_until);
    let (job, ok) = jobs::run_next(&app.state, &rec).await.unwrap().unwrap();
    assert_eq!((job.kind.as_str(), ok), ("ban.lift", true));
    assert_eq!(
        scores("eve").await,
        200,
        "the new ban lifts at its own time"
    );
}
