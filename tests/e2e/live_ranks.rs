//! Live ranks for every player: `me` standings derived from the change events
//! (`server/src/hub/derive.rs`) agree with Redis, and after the load stops every player's last
//! `me` push equals the stored standing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::StreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redis::AsyncCommands;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::scorecast_server::hub::derive::{movers_after, Move, Standings};
use scorecast_tests::scorecast_server::hub::ViewCounts;
use scorecast_tests::scorecast_shared::Id;
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::{spawn_app, spawn_app_with, TestApp};
use serde_json::{json, Value};

/// What this test's own server did for the views of `board` (not the process-wide metrics,
/// which tests running beside it also move).
fn counts(app: &TestApp, board: &str) -> ViewCounts {
    app.state.hub.view_counts(&Id::parse(board).unwrap())
}

/// Players of the property test.
const PLAYERS: usize = 12;

#[derive(Clone, Debug)]
enum Step {
    /// The player's score becomes the points (board op `set`).
    Set(usize, i64),
    Remove(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..PLAYERS, 0..40i64).prop_map(|(p, s)| Step::Set(p, s)),
        1 => (0..PLAYERS).prop_map(Step::Remove),
    ]
}

fn name(p: usize) -> String {
    format!("p{p}")
}

/// Applies one case's batches (each sent concurrently, so the batcher groups some into one
/// event), derives every player's standing from the events alone and, after each batch, checks
/// it against `ZREVRANK`/`ZSCORE` at that `seq`.
async fn derive_case(app: &TestApp, board: &str, batches: Vec<Vec<Step>>) -> Result<(), String> {
    app.board(board, json!({"op": "set"})).await;
    let client = redis::Client::open(app.redis.url()).expect("redis url");
    let mut events = client.get_async_pubsub().await.expect("pub/sub connection");
    events
        .subscribe(format!("ev:{{{board}}}"))
        .await
        .expect("SUBSCRIBE");
    let mut events = events.into_on_message();
    let mut redis = app.redis_conn().await;
    let ids: Vec<Id> = (0..PLAYERS).map(|p| Id::parse(&name(p)).unwrap()).collect();
    // An empty board: every standing is known (absent) at seq 0. The standings persist across
    // batches, as in the hub, and each batch's events are derived in one go, as in a flush.
    let mut known = Standings::default();
    for p in &ids {
        known.learn(p, None, None, 0);
    }
    let mut seen_seq = 0u64;
    for batch in batches {
        join_all(batch.iter().map(|s| async move {
            match *s {
                Step::Set(p, points) => {
                    app.score(board, &name(p), points).await;
                }
                Step::Remove(p) => {
                    let r = app
                        .call(
                            reqwest::Method::DELETE,
                            &format!("/admin/boards/{board}/players/{}", name(p)),
                            None,
                            true,
                        )
                        .await;
                    // Removing a player who is not on the board is a 404 that changes nothing.
                    assert!(
                        r.status.is_success() || r.code() == "not_found",
                        "remove: {:?}",
                        r.body
                    );
                }
            }
        }))
        .await;
        let seq: Option<u64> = redis.get(format!("lb:{{{board}}}:seq")).await.unwrap();
        let seq = seq.unwrap_or(0);
        let (mut moves, mut seqs) = (Vec::new(), Vec::new());
        // Where the last event's movers stand, from that event alone (`hub/commit.rs` sends it
        // with the acks): Redis is at that event's seq now.
        let mut last_event = 0;
        while seen_seq < seq {
            let msg = tokio::time::timeout(Duration::from_secs(10), events.next())
                .await
                .map_err(|_| format!("no event after seq {seen_seq} (want {seq})"))?
                .expect("pub/sub stream");
            let ev: Value = serde_json::from_slice(msg.get_payload_bytes()).unwrap();
            let s = ev["seq"].as_u64().unwrap();
            if s != seen_seq + 1 {
                return Err(format!("event seq {s} after {seen_seq}"));
            }
            seen_seq = s;
            last_event = moves.len();
            seqs.push((s, moves.len()));
            moves.extend(ev["changes"].as_array().unwrap().iter().map(|c| Move {
                player: Id::parse(c["player"].as_str().unwrap()).unwrap(),
                score: c["score"].as_i64(),
                rank: c["rank"].as_u64(),
                previous_rank: c["previous_rank"].as_u64(),
                name: c["name"].as_str().map(str::to_string),
            }));
        }
        if known.derive(&moves, &seqs).inconsistent {
            return Err(format!("a mover disagreed with its event up to seq {seq}"));
        }
        let key = format!("lb:{{{board}}}:s:all");
        for m in movers_after(&moves[last_event..]) {
            let rank: Option<u64> = redis.zrevrank(&key, m.player.as_str()).await.unwrap();
            let score: Option<f64> = redis.zscore(&key, m.player.as_str()).await.unwrap();
            let stored = (score.map(|s| s as i64), rank.map(|r| r + 1));
            if (m.score, m.rank) != stored {
                return Err(format!(
                    "{} after the event of seq {seq} alone: {:?}, Redis {stored:?}",
                    m.player,
                    (m.score, m.rank)
                ));
            }
        }
        for p in &ids {
            let rank: Option<u64> = redis.zrevrank(&key, p.as_str()).await.unwrap();
            let score: Option<f64> = redis.zscore(&key, p.as_str()).await.unwrap();
            let stored = (score.map(|s| s as i64), rank.map(|r| r + 1), Some(seq));
            let st = known.get(p).map(|s| (s.score, s.rank, s.at));
            if st != Some(stored) {
                return Err(format!(
                    "{p} at seq {seq}: derived {st:?}, Redis {stored:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Random submissions and removals on a real Redis: every derived rank equals `ZREVRANK` at
/// that seq, and so does each mover's standing worked out from its last event alone.
#[test]
fn derived_ranks_equal_redis_at_every_seq() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = rt.block_on(spawn_app());
    let boards = AtomicU64::new(0);
    let batches = prop::collection::vec(prop::collection::vec(step(), 1..6), 1..20);
    let mut runner = TestRunner::new(Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&batches, |case| {
        let board = format!("d{}", boards.fetch_add(1, Ordering::Relaxed));
        rt.block_on(derive_case(&app, &board, case))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// One player's session: watches `me`, submits `points` one after the other, and returns the
/// client with the last `rank` push it saw.
async fn play(app: &TestApp, board: &str, p: usize, points: Vec<i64>) -> (WsClient, Value) {
    play_view(app, board, p, points, "me").await
}

/// [`play`] for any player view (`me` or `around` radius 3); returns its last push.
async fn play_view(
    app: &TestApp,
    board: &str,
    p: usize,
    points: Vec<i64>,
    view: &str,
) -> (WsClient, Value) {
    let player = format!("lr{p}");
    let ty = if view == "me" { "rank" } else { view };
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token(&player, None)).await["type"], "welcome");
    let mut last = ws.subscribe(board, view, json!({"radius": 3})).await;
    assert_eq!(last["type"], ty, "snapshot: {last}");
    let n = points.len();
    for (i, pts) in points.into_iter().enumerate() {
        ws.send_json(
            json!({"type": "submit", "id": format!("s{i}"), "board": board, "points": pts}),
        )
        .await;
    }
    let mut acks = 0;
    while acks < n {
        match ws.next_within(Duration::from_secs(20)).await {
            Some(Incoming::Json(v)) if v["type"] == "ack" => acks += 1,
            Some(Incoming::Json(v)) if v["type"] == ty => last = v,
            other => panic!("{player}: expected an ack or a push, got {other:?}"),
        }
    }
    (ws, last)
}

/// Several hundred players each watch `me` and submit concurrently; once the load stops, each
/// one's last `me` push equals `GET /v1/boards/{b}/players/{p}`.
async fn last_push_equals_stored(ranking: &str) {
    const N: usize = 300;
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 100_000;
        },
        Clock::Redis,
    )
    .await;
    let board = "live";
    app.board(board, json!({"ranking": ranking})).await;
    // Deterministic pseudo-random points; a few players share scores (ties).
    let points = |p: usize, i: usize| ((p * 7919 + i * 104_729) % 50) as i64 + 1;
    let sessions =
        join_all((0..N).map(|p| play(&app, board, p, (0..3).map(|i| points(p, i)).collect())))
            .await;
    let mut differ = Vec::new();
    let mut pushes = HashMap::new();
    for (p, (mut ws, mut last)) in sessions.into_iter().enumerate() {
        let player = format!("lr{p}");
        let stored = app
            .get(&format!("/v1/boards/{board}/players/{player}"))
            .await;
        assert_eq!(stored.status, 200, "{:?}", stored.body);
        // The views converge: wait for the push that shows the stored standing (it may be
        // the one already seen).
        last = last_rank_until(&mut ws, last, &stored.body, Duration::from_secs(10)).await;
        if !shows(&last, &stored.body) {
            differ.push(format!(
                "{player}: last push {last}, stored {}",
                stored.body
            ));
        }
        pushes.insert(player, ws);
    }
    assert!(
        differ.is_empty(),
        "{} players differ: {:?}",
        differ.len(),
        &differ[..differ.len().min(5)]
    );
    if ranking == "ordinal" {
        // Derivation does the work here (this instance's counts for this board): once every
        // watcher's standing is known, a newcomer at the top moves each of them down by one,
        // and every new rank is derived from that event, none read.
        let before = counts(&app, board);
        app.score(board, "newcomer", 1_000_000).await;
        for (player, ws) in &mut pushes {
            let stored = app
                .get(&format!("/v1/boards/{board}/players/{player}"))
                .await;
            let last =
                last_rank_until(ws, Value::Null, &stored.body, Duration::from_secs(10)).await;
            assert!(
                shows(&last, &stored.body),
                "{player}: last push {last}, stored {}",
                stored.body
            );
        }
        let after = counts(&app, board);
        assert!(
            after.me_derived >= before.me_derived + N as u64 && after.me_read == before.me_read,
            "standings derived {} -> {}, read {} -> {}",
            before.me_derived,
            after.me_derived,
            before.me_read,
            after.me_read
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_me_push_equals_the_stored_rank_ordinal() {
    last_push_equals_stored("ordinal").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_me_push_equals_the_stored_rank_shared() {
    last_push_equals_stored("shared").await;
}

/// A session that stops reading while its board keeps changing falls behind: its `me` updates
/// are left for later flushes rather than rendered only to be replaced (`hub/worker.rs`). Once it
/// reads again, its last `rank` push equals the stored standing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_me_view_catches_up_with_the_stored_standing() {
    const PLAYERS: usize = 100;
    let app = spawn_app_with(
        |s| {
            // Behind, not stalled for good: the session must not be closed meanwhile.
            s.ws.slow_client_ms = 60_000;
        },
        Clock::Redis,
    )
    .await;
    let board = "lag";
    app.board(board, json!({"op": "incr"})).await;
    let app = &app;
    join_all((0..PLAYERS).map(|p| async move {
        app.score(board, &format!("player-{p:03}"), 1000 + p as i64)
            .await
    }))
    .await;
    app.score(board, "watcher", 500).await;
    let mut ws = WsClient::connect_small_buffer(&app.ws_url(), app.port, 4096).await;
    assert_eq!(
        ws.hello(&app.token("watcher", None)).await["type"],
        "welcome"
    );
    assert_eq!(ws.subscribe(board, "me", json!({})).await["type"], "rank");
    // `top 100` pushes of several KiB fill the socket soon once the client stops reading.
    assert_eq!(
        ws.subscribe(board, "top", json!({"limit": 100})).await["type"],
        "top"
    );

    // From here on the client does not read; the watcher climbs until the hub defers its `me`
    // update (this instance's count for this board).
    let deferred = || counts(app, board).deferred;
    let started = std::time::Instant::now();
    let mut round = 0;
    while deferred() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the `me` view was never deferred"
        );
        round += 1;
        app.score(board, &format!("player-{:03}", round % PLAYERS), 1)
            .await;
        app.score(board, "watcher", 7).await;
    }
    // A last climb, whose update is deferred too while the client still does not read: only a
    // later flush, once the session caught up, can show it. The counter has no event to await:
    // it is polled, bounded.
    let before = deferred();
    app.score(board, "watcher", 300).await;
    while deferred() == before {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the last update was never deferred"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stored = app
        .get(&format!("/v1/boards/{board}/players/watcher"))
        .await;
    assert_eq!(stored.status, 200, "{:?}", stored.body);
    let last = last_rank_until(&mut ws, Value::Null, &stored.body, Duration::from_secs(20)).await;
    assert!(
        shows(&last, &stored.body),
        "no `rank` push with the stored standing {} (last {last})",
        stored.body
    );
}

/// Whether a `rank` push shows the standing `stored` (`GET /v1/boards/{b}/players/{p}`).
fn shows(push: &Value, stored: &Value) -> bool {
    (&push["score"], &push["rank"]) == (&stored["score"], &stored["rank"])
}

/// Reads `rank` pushes until one shows `stored` (see [`last_push_until`]).
async fn last_rank_until(
    ws: &mut WsClient,
    last: Value,
    stored: &Value,
    within: Duration,
) -> Value {
    last_push_until(ws, "rank", last, within, |v| shows(v, stored)).await
}

/// Reads pushes of type `ty` (other messages skipped) until `last` or one of them satisfies
/// `done`, `within` has passed or the socket closed; returns the last one seen (`last` if none
/// came).
async fn last_push_until(
    ws: &mut WsClient,
    ty: &str,
    mut last: Value,
    within: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    while !done(&last) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_within(left).await {
            Some(Incoming::Json(v)) if v["type"] == ty => last = v,
            Some(Incoming::Json(_)) => {}
            _ => break,
        }
    }
    last
}

/// A submitter's own `me` update is queued before its ack is handed out (`hub/commit.rs`), so
/// both leave together, not at the board's next flush: with a window far longer than the test,
/// the update still comes with the ack and shows the ack's standing. A second submission within
/// the window gets its ack without an update (at most one message per view per window).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitters_rank_update_goes_with_its_ack() {
    let app = spawn_app_with(
        // The board's first flush runs at once; the next one would come after the test.
        |s| s.ws.coalesce_ms = 600_000,
        Clock::Redis,
    )
    .await;
    let board = "acked";
    app.board(board, json!({})).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token("alice", None)).await["type"], "welcome");
    assert_eq!(
        ws.subscribe(board, "me", json!({})).await["rank"],
        Value::Null
    );
    assert_eq!(ws.subscribe(board, "top", json!({})).await["type"], "top");
    // A first change and its flush: the hub now knows the board's ranking and season.
    app.score(board, "bob", 50).await;
    ws.recv_until(WAIT, |v| v["type"] == "top" && v["total"] == 1)
        .await;

    let with_ack = counts(&app, board).with_ack;
    ws.send_json(json!({"type": "submit", "id": "s1", "board": board, "points": 100}))
        .await;
    let (mut ack, mut rank) = (None, None);
    while ack.is_none() || rank.is_none() {
        match ws.next_within(WAIT).await {
            Some(Incoming::Json(v)) if v["type"] == "ack" => ack = Some(v),
            Some(Incoming::Json(v)) if v["type"] == "rank" => rank = Some(v),
            other => {
                panic!("expected the ack and the `rank` update, got {other:?} ({ack:?}, {rank:?})")
            }
        }
    }
    let (ack, rank) = (ack.unwrap(), rank.unwrap());
    assert_eq!(
        (&ack["score"], &ack["rank"]),
        (&json!(100), &json!(1)),
        "{ack}"
    );
    assert_eq!(
        (&rank["score"], &rank["rank"], &rank["previous_rank"]),
        (&json!(100), &json!(1), &Value::Null),
        "{rank}"
    );
    // This instance's count for this board: the update went with the ack.
    assert_eq!(counts(&app, board).with_ack, with_ack + 1);

    // Within the window: the ack alone. An update would have been queued before the ack, so it
    // would come before the pong.
    ws.send_json(json!({"type": "submit", "id": "s2", "board": board, "points": 5}))
        .await;
    ws.send_json(json!({"type": "ping"})).await;
    let mut acked = false;
    loop {
        match ws.next_within(WAIT).await {
            Some(Incoming::Json(v)) if v["type"] == "ack" => {
                assert_eq!(v["score"], 105, "{v}");
                acked = true;
            }
            Some(Incoming::Json(v)) if v["type"] == "pong" => break,
            other => panic!("expected the ack and the pong only, got {other:?}"),
        }
    }
    assert!(acked);
}

/// `around` windows, read in one bulk read per flush: after the load stops, each player's last
/// `around` push equals `GET /v1/boards/{b}/players/{p}/around?radius=3`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_around_push_equals_the_stored_window() {
    const N: usize = 120;
    let app = spawn_app_with(|s| s.public_limit.limit = 100_000, Clock::Redis).await;
    let board = "win";
    app.board(board, json!({})).await;
    let points = |p: usize, i: usize| ((p * 7919 + i * 104_729) % 50) as i64 + 1;
    let sessions = join_all((0..N).map(|p| {
        play_view(
            &app,
            board,
            p,
            (0..3).map(|i| points(p, i)).collect(),
            "around",
        )
    }))
    .await;
    let mut differ = Vec::new();
    let mut open = Vec::new();
    for (p, (mut ws, last)) in sessions.into_iter().enumerate() {
        let player = format!("lr{p}");
        let stored = app
            .get(&format!(
                "/v1/boards/{board}/players/{player}/around?radius=3"
            ))
            .await;
        assert_eq!(stored.status, 200, "{:?}", stored.body);
        let want = named_window(&stored.body);
        assert_eq!(want.len(), 7, "a full window: {:?}", stored.body);
        let last = await_window(&mut ws, last, &want).await;
        if named_window(&last) != want {
            differ.push(format!(
                "{player}: last push {last}, stored {}",
                stored.body
            ));
        }
        open.push(ws);
    }
    assert!(
        differ.is_empty(),
        "{} players differ: {:?}",
        differ.len(),
        &differ[..differ.len().min(3)]
    );
}

/// A board's ranking changed by an admin (no change event): the hub stops deriving ordinal
/// ranks and `me` shows the shared rank once the next events arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ranking_change_is_noticed_without_an_event() {
    let app = spawn_app().await;
    app.board("rk", json!({"op": "set"})).await;
    app.score("rk", "a", 10).await;
    app.score("rk", "b", 10).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token("a", None)).await["type"], "welcome");
    let snap = ws.subscribe("rk", "me", json!({})).await;
    // Equal scores, ordinal: Redis orders b before a.
    assert_eq!(snap["rank"], 2, "{snap}");
    // A first flush (seen on a `top` view), so the worker has read the ranking as ordinal.
    assert_eq!(ws.subscribe("rk", "top", json!({})).await["type"], "top");
    app.score("rk", "c0", 1).await;
    let top = ws
        .recv_until(Duration::from_secs(10), |v| v["type"] == "top")
        .await;
    assert_eq!(top["total"], 3, "{top}");
    app.board("rk", json!({"op": "set", "ranking": "shared"}))
        .await;
    // Newcomers below a reach no derived rank; the worker's config check (at most once a
    // second, on a flush) must notice the change and read a's standing: rank 1, shared with b.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    let mut n = 0;
    let mut last = snap;
    while last["rank"] != 1 && tokio::time::Instant::now() < deadline {
        n += 1;
        app.score("rk", &format!("c{n}"), 1).await;
        if let Some(Incoming::Json(v)) = ws.next_within(Duration::from_millis(300)).await {
            if v["type"] == "rank" {
                last = v;
            }
        }
    }
    assert_eq!(last["rank"], 1, "me after the ranking change: {last}");
    assert_eq!(last["score"], 10);
}

/// (player, score, rank, name) of an `around` message's or response's entries.
fn named_window(v: &Value) -> Vec<(Value, Value, Value, Value)> {
    v["entries"]
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| {
                    let f = |k: &str| e[k].clone();
                    (f("player"), f("score"), f("rank"), f("name"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `last`, or the next `around` push, that shows `want`; or what was last seen.
async fn await_window(
    ws: &mut WsClient,
    last: Value,
    want: &[(Value, Value, Value, Value)],
) -> Value {
    last_push_until(ws, "around", last, Duration::from_secs(10), |v| {
        named_window(v) == want
    })
    .await
}

/// `around` from the change stream (`hub/around.rs`): once a window has been read, a newcomer
/// from outside it (whose display name its event carries) is sent without a read, and what is
/// sent equals the stored window, names included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_around_window_is_derived_from_the_events() {
    let app = spawn_app().await;
    let board = "aw";
    app.board(board, json!({"op": "set"})).await;
    // a1 100, a2 90, ..., a10 10.
    for i in 1..=10i64 {
        app.score(board, &format!("a{i}"), 110 - 10 * i).await;
    }
    let stored = || async {
        let r = app
            .get(&format!("/v1/boards/{board}/players/a5/around?radius=2"))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        named_window(&r.body)
    };
    let mut watcher = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        watcher.hello(&app.token("a5", None)).await["type"],
        "welcome"
    );
    let snap = watcher
        .subscribe(board, "around", json!({"radius": 2}))
        .await;
    assert_eq!(named_window(&snap), stored().await, "snapshot");

    // A move inside the window (a7 passes a6): read, and kept from then on.
    app.score(board, "a7", 55).await;
    let want = stored().await;
    let last = await_window(&mut watcher, Value::Null, &want).await;
    assert_eq!(named_window(&last), want, "after a7's move: {last}");

    // a9, named "Nine", jumps from rank 9 into the window (between a7 and a6): derived.
    let before = counts(&app, board);
    let mut nine = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        nine.hello(&app.token("a9", Some("Nine"))).await["type"],
        "welcome"
    );
    // Read the stored window only once the submission is applied (its ack).
    assert_eq!(nine.submit("n1", board, 52).await["type"], "ack");
    let want = stored().await;
    assert_eq!(want[4].0, "a9");
    assert_eq!(want[4].3, "Nine");
    let last = await_window(&mut watcher, Value::Null, &want).await;
    assert_eq!(named_window(&last), want, "after a9's move: {last}");
    let after = counts(&app, board);
    assert!(
        after.around_derived > before.around_derived && after.around_read == before.around_read,
        "the window was read, not derived: {before:?} -> {after:?}"
    );
}

/// 2 000 players each watch `me` and submit a burst, all at once; once the burst stopped, every
/// player's last `me` push equals its standing read from Redis (`ZSCORE`/`ZREVRANK`), and the
/// last of them arrives within one maximal window (1 s: the windows' stretch is bounded) plus
/// [`DELIVERY_MARGIN`] of the burst's last ack — whatever the flushes deferred or derived
/// meanwhile. All clients read at once, so an arrival is timed when it is read (never earlier).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_burst_every_me_view_of_two_thousand_players_converges() {
    const N: usize = 2000;
    const BURST: usize = 3;
    /// Connections opened at a time.
    const BATCH: usize = 200;
    let app = spawn_app_with(
        |s| {
            s.max_conns_per_addr = 0;
            s.public_limit.limit = 100_000;
        },
        Clock::Redis,
    )
    .await;
    let board = "converge";
    app.board(board, json!({"op": "set"})).await;
    let app = &app;
    let mut clients = Vec::with_capacity(N);
    while clients.len() < N {
        let first = clients.len();
        clients.extend(
            join_all((first..(first + BATCH).min(N)).map(|p| async move {
                let mut ws = WsClient::connect(&app.ws_url()).await;
                let hello = ws.hello(&app.token(&format!("cv{p}"), None)).await;
                assert_eq!(hello["type"], "welcome", "{hello}");
                let snap = ws.subscribe(board, "me", json!({})).await;
                assert_eq!(snap["type"], "rank", "{snap}");
                (ws, snap)
            }))
            .await,
        );
    }
    // The burst: every player's submissions in flight together, then their acks.
    let points = |p: usize, i: usize| ((p * 7919 + i * 104_729) % 5000) as i64 + 1;
    let clients = join_all(clients.into_iter().enumerate().map(|(p, (mut ws, mut last))| async move {
        for i in 0..BURST {
            ws.send_json(json!({"type": "submit", "id": format!("c{i}"), "board": board, "points": points(p, i)}))
                .await;
        }
        let mut acks = 0;
        while acks < BURST {
            match ws.next_within(Duration::from_secs(60)).await {
                Some(Incoming::Json(v)) if v["type"] == "ack" => acks += 1,
                Some(Incoming::Json(v)) if v["type"] == "rank" => last = v,
                other => panic!("cv{p}: expected an ack or a push, got {other:?}"),
            }
        }
        (ws, last, tokio::time::Instant::now())
    }))
    .await;
    // The load stopped when the burst's last ack arrived.
    let stopped = clients.iter().map(|c| c.2).max().expect("clients");
    // Every standing in one pipelined read, while the pushes wait in the sockets.
    let key = format!("lb:{{{board}}}:s:all");
    let mut pipe = redis::pipe();
    for p in 0..N {
        pipe.zrevrank(&key, format!("cv{p}"))
            .zscore(&key, format!("cv{p}"));
    }
    let standings: Vec<(Option<u64>, Option<f64>)> =
        pipe.query_async(&mut app.redis_conn().await).await.unwrap();
    let read = join_all(clients.into_iter().zip(standings).enumerate().map(
        |(p, ((mut ws, last, _), (rank, score)))| async move {
            let stored = json!({"score": score.map(|s| s as i64), "rank": rank.map(|r| r + 1)});
            assert!(rank.is_some(), "cv{p} is on the board");
            let last = last_rank_until(&mut ws, last, &stored, Duration::from_secs(60)).await;
            (p, last, stored, tokio::time::Instant::now())
        },
    ))
    .await;
    let differ: Vec<String> = read
        .iter()
        .filter(|(_, last, stored, _)| !shows(last, stored))
        .map(|(p, last, stored, _)| format!("cv{p}: last push {last}, stored {stored}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {N} players differ: {:?}",
        differ.len(),
        &differ[..differ.len().min(5)]
    );
    let converged = read.iter().map(|r| r.3).max().expect("players") - stopped;
    eprintln!("every `me` view of {N} players showed the stored standing {converged:?} after the burst's last ack");
    assert!(
        converged <= MAX_WINDOW + DELIVERY_MARGIN,
        "converged {converged:?} after the load stopped, past one maximal window ({MAX_WINDOW:?}) and {DELIVERY_MARGIN:?} for delivery"
    );
}

/// The instance's push budget (`ws.player_pushes_per_sec`): 200 players who watch `me` while
/// they submit would each be sent an update about every 50 ms by their board's flushes; with a
/// budget of 400 messages a second the flushes send at most that (plus one flush's worth, sent
/// before it is paid back), the board's window shows the stretch and its cause
/// (`push_budget`), and once the load stops every last `me` push still equals the stored
/// standing within one maximal window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_push_budget_bounds_the_players_messages_and_the_views_still_converge() {
    const PER_SEC: u32 = 400;
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 100_000;
            s.ws.player_pushes_per_sec = PER_SEC;
        },
        Clock::Redis,
    )
    .await;
    let run = submit_while_watching(&app, "budget", "push_budget", 20, Duration::ZERO).await;
    let allowed = f64::from(PER_SEC) * run.elapsed.as_secs_f64() + WATCHERS as f64;
    assert!(
        run.pushed as f64 <= allowed,
        "{} messages in {:?}: over the budget of {PER_SEC}/s",
        run.pushed,
        run.elapsed
    );
}

/// Players who keep submitting get their rank with each ack: with no push budget, 200 players
/// watching `me` and submitting back to back make their board's players' window stretch for
/// that cause (`with_acks`), within its bound (two coalescing windows), and grow the hold after an
/// ack (which takes the rest of the longest window); once the load stops every last `me` push
/// still equals the stored standing within one maximal window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_who_keep_submitting_stretch_the_window_and_the_views_still_converge() {
    let app = spawn_without_push_budget().await;
    // Long enough a load (about a second) for the hold to grow a few times: the players' first
    // updates are the flushes', so it starts growing a few flushes in.
    let run = submit_while_watching(&app, "acks", "with_acks", 60, Duration::ZERO).await;
    assert!(
        run.stretched <= MAX_WINDOW / 10,
        "stretched to {:?}",
        run.stretched
    );
    assert!(run.with_ack > 0, "no update went with an ack");
    // The hold after an ack grows while the players keep submitting, within what the window
    // leaves of the longest.
    assert!(
        run.longest_hold >= Duration::from_millis(400)
            && run.longest_hold <= MAX_WINDOW - Duration::from_millis(50),
        "longest hold {:?}",
        run.longest_hold
    );
}

/// Players who submit at a pace slower than the first hold after an ack (one coalescing window,
/// 50 ms; here one submission every 400 ms, on a board where every watcher has a score, so
/// each submission moves others' ranks) still count as submitting: the hold grows for them too,
/// and the window stretches for that cause. While the hold is shorter than their pace a flush
/// pushes each of them an update of its own between two acks; had only a view whose last
/// update went with an ack counted, most views would count as not submitting at most flushes,
/// and the hold would stay at 50 ms. Once it grew, a player whose ack came less than a window
/// after a flush's update (too soon to bring one) is held after the flush's next update as
/// after an ack; were they not, the flushes would update them every window until an ack
/// happened to find their view a window past its last message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_paced_slower_than_the_hold_still_grow_it() {
    let app = spawn_without_push_budget().await;
    let pace = Duration::from_millis(400);
    let run = submit_while_watching(&app, "paced", "with_acks", 8, pace).await;
    assert!(run.with_ack > 0, "no update went with an ack");
    assert!(
        run.longest_hold >= Duration::from_millis(200),
        "longest hold {:?}: it did not grow for players paced {pace:?} apart",
        run.longest_hold
    );
    // Once it grew, the players' acks bring their ranks: the flushes send them little of their
    // own (the views' last updates after the load included), even to players whose ack came too
    // soon after a flush's update to bring one.
    let (pushed, with_ack) = run.since_grown.expect("the hold grew");
    assert!(
        pushed * 2 <= with_ack,
        "after the hold grew: {pushed} updates by the flushes against {with_ack} with acks"
    );
}

/// A hold after an ack that has grown from its first 50 ms.
const HOLD_GROWN: Duration = Duration::from_millis(800);

/// An app whose public submission limit stays out of the way and whose flushes have no push
/// budget (`ws.player_pushes_per_sec` 0): what stretches its windows is the players' pace.
async fn spawn_without_push_budget() -> TestApp {
    spawn_app_with(
        |s| {
            s.public_limit.limit = 100_000;
            s.ws.player_pushes_per_sec = 0;
        },
        Clock::Redis,
    )
    .await
}

/// Players watching `me` in [`submit_while_watching`].
const WATCHERS: usize = 200;

/// What [`submit_while_watching`] saw.
struct LoadRun {
    /// The players' window the first time it was stretched for the cause asked for.
    stretched: Duration,
    /// `me` and `around` messages the flushes offered, and `me` updates sent with an ack.
    pushed: u64,
    with_ack: u64,
    /// The longest hold of a `me` view after an update that went with its ack, while the load
    /// ran.
    longest_hold: Duration,
    /// From the time the hold had grown to [`HOLD_GROWN`] to the end (after the views
    /// converged): the flushes' `me` and `around` messages, and the `me` updates sent with an
    /// ack.
    since_grown: Option<(u64, u64)>,
    elapsed: Duration,
}

/// [`WATCHERS`] players watch `me` on `board` (created here) and each submits `rounds` scores
/// one after the other, each `pace` after the last one's ack. Asserts that the board's players' window
/// was stretched for `cause` while the load ran, and that once it stopped every player's last
/// `me` push equals its stored standing, within one maximal window (plus the delivery margin).
async fn submit_while_watching(
    app: &TestApp,
    board: &'static str,
    cause: &str,
    rounds: usize,
    pace: Duration,
) -> LoadRun {
    app.board(board, json!({"op": "set", "submit_limit": null}))
        .await;
    let clients = join_all((0..WATCHERS).map(|p| async move {
        let mut ws = WsClient::connect(&app.ws_url()).await;
        assert_eq!(
            ws.hello(&app.token(&format!("pb{p}"), None)).await["type"],
            "welcome"
        );
        // Every player is on the board before anyone watches: from the first round on, each
        // submission moves other watchers' ranks.
        ws.send_json(
            json!({"type": "submit", "id": "first", "board": board, "points": p as i64 + 1}),
        )
        .await;
        let ack = ws.next_json().await;
        assert_eq!(ack["type"], "ack", "{ack}");
        let snap = ws.subscribe(board, "me", json!({})).await;
        assert_eq!(snap["type"], "rank", "{snap}");
        (ws, snap)
    }))
    .await;
    let before = counts(app, board);
    let started = tokio::time::Instant::now();
    // The stretch is visible while the load runs, and so is the hold after an ack (the longest
    // seen until the load ended and the stretch was seen).
    let done = std::sync::atomic::AtomicBool::new(false);
    let watch = async {
        // The load ends within 30 s; a stretch not seen by one maximal window after it is none.
        let mut deadline = started + Duration::from_secs(30);
        let (mut stretched, mut longest_hold, mut grown) = (None, Duration::ZERO, None);
        loop {
            let (window, now) = app.state.hub.views_window();
            let hold = app.state.hub.views_hold();
            longest_hold = longest_hold.max(hold);
            if hold >= HOLD_GROWN && grown.is_none() {
                grown = Some(counts(app, board));
            }
            if now == cause && stretched.is_none() {
                stretched = Some(window);
            }
            let done = done.load(std::sync::atomic::Ordering::Relaxed);
            if done {
                deadline = deadline.min(tokio::time::Instant::now() + MAX_WINDOW);
            }
            if (done && stretched.is_some()) || tokio::time::Instant::now() > deadline {
                return (stretched, longest_hold, grown);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let points = |p: usize, i: usize| ((p * 7919 + i * 104_729) % 5000) as i64 + 1;
    let load = async {
        let clients = join_all(clients.into_iter().enumerate().map(|(p, (mut ws, mut last))| async move {
        for i in 0..rounds {
            if !pace.is_zero() {
                // The load's pace, not a wait for an event (pushes that come meanwhile are read
                // with the next ack); the players' first submissions are spread over one pace.
                let first = pace * (p % 10) as u32 / 10;
                tokio::time::sleep(if i == 0 { first } else { pace }).await;
            }
            ws.send_json(json!({"type": "submit", "id": format!("b{i}"), "board": board, "points": points(p, i)}))
                .await;
            loop {
                match ws.next_within(Duration::from_secs(30)).await {
                    Some(Incoming::Json(v)) if v["type"] == "ack" => break,
                    Some(Incoming::Json(v)) if v["type"] == "rank" => last = v,
                    other => panic!("pb{p}: expected an ack or a push, got {other:?}"),
                }
            }
        }
        (ws, last)
    }))
        .await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        clients
    };
    let ((stretched, longest_hold, grown), clients) = tokio::join!(watch, load);
    let stretched = stretched.unwrap_or_else(|| {
        panic!("the window was never stretched by {cause} (longest hold {longest_hold:?})")
    });
    assert!(stretched > Duration::from_millis(50), "{stretched:?}");
    let stopped = tokio::time::Instant::now();
    let key = format!("lb:{{{board}}}:s:all");
    let mut pipe = redis::pipe();
    for p in 0..WATCHERS {
        pipe.zrevrank(&key, format!("pb{p}"))
            .zscore(&key, format!("pb{p}"));
    }
    let standings: Vec<(Option<u64>, Option<f64>)> =
        pipe.query_async(&mut app.redis_conn().await).await.unwrap();
    let read = join_all(clients.into_iter().zip(standings).enumerate().map(
        |(p, ((mut ws, last), (rank, score)))| async move {
            let stored = json!({"score": score.map(|s| s as i64), "rank": rank.map(|r| r + 1)});
            let last = last_rank_until(&mut ws, last, &stored, Duration::from_secs(30)).await;
            (p, shows(&last, &stored), tokio::time::Instant::now(), ws)
        },
    ))
    .await;
    let differ: Vec<usize> = read.iter().filter(|r| !r.1).map(|r| r.0).collect();
    assert!(
        differ.is_empty(),
        "players whose last push differs: {differ:?}"
    );
    let converged = read.iter().map(|r| r.2).max().expect("players") - stopped;
    assert!(
        converged <= MAX_WINDOW + DELIVERY_MARGIN,
        "converged {converged:?} after the load stopped"
    );
    // Read while the players are still connected: with the last one gone the board is dropped,
    // and its counts with it.
    let after = counts(app, board);
    drop(read);
    let run = LoadRun {
        stretched,
        pushed: after.pushed - before.pushed,
        with_ack: after.with_ack - before.with_ack,
        longest_hold,
        since_grown: grown.map(|g| (after.pushed - g.pushed, after.with_ack - g.with_ack)),
        elapsed: tokio::time::Instant::now() - started,
    };
    eprintln!(
        "{} `me` pushes by the flushes and {} with acks in {:?}; window stretched to {stretched:?} ({cause}); longest hold {:?}; since the hold grew: {:?}",
        run.pushed, run.with_ack, run.elapsed, run.longest_hold, run.since_grown
    );
    run
}

/// The longest a `me` window stretches to (20 × `ws.coalesce_ms`: `docs/protocol.md`, "Views").
const MAX_WINDOW: Duration = Duration::from_secs(1);
/// Beyond it: the last flush reads, renders and offers 2 000 updates and the sessions write them,
/// on a 2-core machine that also runs this test's 2 000 clients and other tests.
const DELIVERY_MARGIN: Duration = Duration::from_millis(1500);

/// Many sessions subscribe to views on several boards, unsubscribe some and disconnect, all at
/// once: the registry and the boards' cells end consistent — every session gone, no view left
/// on any board, each board's cell dropped with its last view — and a later subscription on the
/// same board gets a fresh cell that pushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_subscribes_unsubscribes_and_disconnects_leave_no_view_behind() {
    const SESSIONS: usize = 300;
    const BOARDS: [&str; 3] = ["race-a", "race-b", "race-c"];
    let app = spawn_app_with(|s| s.max_conns_per_addr = 0, Clock::Redis).await;
    for b in BOARDS {
        app.board(b, json!({})).await;
    }
    let app = &app;
    join_all((0..SESSIONS).map(|p| async move {
        let mut ws = WsClient::connect(&app.ws_url()).await;
        assert_eq!(
            ws.hello(&app.token(&format!("rc{p}"), None)).await["type"],
            "welcome"
        );
        for b in BOARDS {
            assert_eq!(ws.subscribe(b, "me", json!({})).await["type"], "rank");
            assert_eq!(ws.subscribe(b, "top", json!({})).await["type"], "top");
        }
        if p % 2 == 0 {
            ws.send_json(json!({"type": "unsubscribe", "board": BOARDS[p % 3], "view": "me"}))
                .await;
        }
        // The client goes away (dropped): the server sees its session end.
    }))
    .await;
    nothing_left_behind(&app.state.hub).await;
    // A new view on a board whose cell was dropped: a fresh cell, whose worker pushes.
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        ws.subscribe("race-a", "top", json!({})).await["type"],
        "top"
    );
    app.score("race-a", "newcomer", 1_000_000).await;
    let top = last_push_until(&mut ws, "top", Value::Null, Duration::from_secs(10), |v| {
        v["entries"][0]["player"] == "newcomer"
    })
    .await;
    assert_eq!(top["entries"][0]["player"], "newcomer", "{top}");
}

/// Waits (bounded) until every session has ended, no board is watched and no view is left:
/// sessions end as the server notices each close, so this is polled.
async fn nothing_left_behind(hub: &scorecast_tests::scorecast_server::hub::Hub) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while hub.sessions() > 0
        || hub.boards_watched() > 0
        || hub.views_by_kind().iter().any(|(_, n)| *n > 0)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "left behind: {} sessions, {} boards watched, views {:?}",
            hub.sessions(),
            hub.boards_watched(),
            hub.views_by_kind()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sessions that send their subscribes and go away at once, without waiting for a snapshot: the
/// subscriptions registered go with their session, and a snapshot read that ends after the
/// session did adds nothing back; meanwhile the other sessions' subscribes and ends on the same
/// boards race through the boards' shards of the registry. No view and no board is left behind.
/// Three rounds of 300 sessions with six views each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribes_cut_short_by_a_disconnect_leave_no_view_behind() {
    const SESSIONS: usize = 300;
    const BOARDS: [&str; 3] = ["cut-a", "cut-b", "cut-c"];
    let app = spawn_app_with(|s| s.max_conns_per_addr = 0, Clock::Redis).await;
    for b in BOARDS {
        app.board(b, json!({})).await;
    }
    let app = &app;
    for round in 0..3 {
        join_all((0..SESSIONS).map(|p| async move {
            let mut ws = WsClient::connect(&app.ws_url()).await;
            assert_eq!(
                ws.hello(&app.token(&format!("cut{p}"), None)).await["type"],
                "welcome"
            );
            for b in BOARDS {
                ws.send_json(json!({"type": "subscribe", "board": b, "view": "me"}))
                    .await;
                ws.send_json(json!({"type": "subscribe", "board": b, "view": "top"}))
                    .await;
            }
            // Gone before the snapshots: some subscribes are registered, some in flight.
            drop(ws);
        }))
        .await;
        nothing_left_behind(&app.state.hub).await;
        eprintln!("round {round}: nothing left behind");
    }
}
