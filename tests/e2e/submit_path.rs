//! The submission path: bounded dedup memory, the batched audit log read per
//! submission, ZINCRBY at the edge of the exact range, and |points| bounded by
//! `max_points_per_submit`.

use futures_util::future::join_all;
use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_shared::ErrorCode;
use scorecast_tests::*;
use serde_json::{json, Value};

/// The dedup window and cap of `lua/submit.lua` (README "Redis keys").
const WINDOW_MS: i64 = 600_000;
const CAP: usize = 64;
/// A dedup hash becomes a hash table when its generation goes past this many records.
const CONVERT_AT: usize = 32;

/// On an `asc`/`best` board a huge negative submission is refused like a huge positive one,
/// and changes nothing; the bound itself is accepted.
#[tokio::test]
async fn max_points_per_submit_bounds_negative_points() {
    let app = spawn_app().await;
    app.board(
        "speed",
        json!({"order": "asc", "op": "best", "max_points_per_submit": 100000}),
    )
    .await;
    app.score("speed", "alice", 500).await;
    let before = app.dump().await;
    for points in [-9_007_199_254_740_991, -100_001] {
        let e = app
            .state
            .submit(&submission(
                "speed",
                "mallory",
                &format!("m{}", -points),
                points,
            ))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::PointsOutOfRange, "points {points}");
    }
    assert_eq!(
        app.dump().await,
        before,
        "a refused submission changes nothing"
    );
    let ok = app
        .state
        .submit(&submission("speed", "bob", "b1", -100_000))
        .await
        .unwrap();
    assert_eq!((ok.score, ok.rank), (-100_000, 1));
}

/// A retried id is a duplicate up to the end of the window (clock injected): it answers the
/// first result and changes nothing, even after other submissions moved the board.
#[tokio::test]
async fn retried_id_within_the_window_is_a_duplicate() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("d", json!({"submit_limit": null})).await;
    let first = app
        .state
        .submit(&submission("d", "alice", "s1", 120))
        .await
        .unwrap();
    app.state
        .submit(&submission("d", "bob", "s1", 500))
        .await
        .unwrap();
    clock.advance(WINDOW_MS - 1);
    let before = app.dump().await;
    let again = app
        .state
        .submit(&submission("d", "alice", "s1", 120))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(
        (again.score, again.rank, again.previous_rank, again.seq),
        (first.score, first.rank, first.previous_rank, first.seq),
        "the first result, not today's rank"
    );
    assert_eq!(app.dump().await, before, "a duplicate changes nothing");
    let page = app.get("/v1/boards/d/players/alice").await;
    assert_eq!(page.body["score"], 120);
}

/// Dedup memory is bounded per player, not per submission: after 10× the cap of submissions
/// a player's record holds at most two generations, the keyspace holds one dedup key per
/// player, and the newest `CAP` ids are still recognised.
#[tokio::test]
async fn dedup_memory_stays_bounded_per_player() {
    let app = spawn_app().await;
    app.board("m", json!({"submit_limit": null})).await;
    let total = 10 * CAP;
    for player in ["p1", "p2"] {
        // Concurrent, so they go in group-committed batches.
        let subs: Vec<_> = (0..total)
            .map(|i| submission("m", player, &format!("s{i}"), 1))
            .collect();
        for r in join_all(subs.iter().map(|s| app.state.submit(s))).await {
            assert!(!r.unwrap().duplicate);
        }
    }
    let mut c = app.redis_conn().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("lb:{m}:*")
        .query_async(&mut c)
        .await
        .unwrap();
    let mut dedup: Vec<_> = keys.iter().filter(|k| k.contains(":dd:")).collect();
    dedup.sort();
    assert_eq!(
        dedup,
        ["lb:{m}:dd:p1", "lb:{m}:dd:p2"],
        "one key per player"
    );
    for k in dedup {
        let fields: usize = redis::cmd("HLEN").arg(k).query_async(&mut c).await.unwrap();
        assert!(
            fields <= 2 * CAP + 2,
            "{k}: {fields} fields after {total} submissions"
        );
        let ttl: i64 = redis::cmd("PTTL").arg(k).query_async(&mut c).await.unwrap();
        assert!(ttl > 0 && ttl <= 2 * WINDOW_MS, "{k} expires: {ttl}");
    }
    // The newest CAP ids of a player are still duplicates and change nothing.
    let score = app.get("/v1/boards/m/players/p1").await.body["score"].clone();
    assert_eq!(score, total);
    for i in total - CAP..total {
        let r = app
            .state
            .submit(&submission("m", "p1", &format!("s{i}"), 1))
            .await
            .unwrap();
        assert!(r.duplicate, "s{i} forgotten");
    }
    assert_eq!(
        app.get("/v1/boards/m/players/p1").await.body["score"],
        score
    );
}

/// A player whose dedup generation goes past 32 records gets a hash table (a lookup no longer
/// scans every record); one with 32 keeps the compact listpack. Both still answer retries with
/// their first result.
#[tokio::test]
async fn a_heavy_submitters_dedup_hash_becomes_a_hash_table() {
    let app = spawn_app().await;
    app.board("h", json!({"submit_limit": null})).await;
    for (player, n) in [("light", CONVERT_AT), ("heavy", CONVERT_AT + 1)] {
        for i in 0..n {
            let r = app
                .state
                .submit(&submission("h", player, &format!("s{i}"), 1))
                .await
                .unwrap();
            assert!(!r.duplicate);
        }
    }
    let mut c = app.redis_conn().await;
    for (player, encoding, fields) in [
        ("light", "listpack", CONVERT_AT + 1),
        ("heavy", "hashtable", CONVERT_AT + 3),
    ] {
        let key = format!("lb:{{h}}:dd:{player}");
        let got: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(got, encoding, "{player}");
        // The records, '#' and, once converted, the marker '!'.
        let n: usize = redis::cmd("HLEN")
            .arg(&key)
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(n, fields, "{player}");
        let again = app
            .state
            .submit(&submission("h", player, "s0", 1))
            .await
            .unwrap();
        assert!(again.duplicate && again.score == 1, "{player}: {again:?}");
    }
}

/// The audit log stores one stream entry per batch, yet answers one object per submission,
/// newest first, and `count` counts submissions.
#[tokio::test]
async fn audit_log_answers_per_submission() {
    let app = spawn_app().await;
    app.board("l", json!({"submit_limit": null})).await;
    let subs: Vec<_> = (0..30)
        .map(|i| submission("l", &format!("p{}", i % 3), &format!("s{i}"), i + 1))
        .collect();
    for r in join_all(subs.iter().map(|s| app.state.submit(s))).await {
        r.unwrap();
    }
    let log = app
        .call(Method::GET, "/admin/boards/l/log?count=1000", None, true)
        .await;
    assert_eq!(log.status, 200);
    let entries = log.body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 30, "one object per submission");
    let mut ids: Vec<_> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 30);
    // Applied in order, so newest first means the last submission first.
    let newest = &entries[0];
    assert_eq!(
        (
            newest["player"].as_str(),
            newest["id"].as_str(),
            newest["points"].as_i64()
        ),
        (Some("p2"), Some("s29"), Some(30))
    );
    assert_eq!(newest["op"], "incr");
    assert_eq!(newest["season"], "all");
    assert!(newest["time_ms"].as_i64().unwrap() > 0);
    // p2 submitted 3 + 6 + ... + 30.
    assert_eq!(newest["score"], (1..=10).map(|k| 3 * k).sum::<i64>());
    let five = app
        .call(Method::GET, "/admin/boards/l/log?count=5", None, true)
        .await;
    let five = five.body["entries"].as_array().unwrap();
    assert_eq!(five.len(), 5);
    assert_eq!(five[..], entries[..5]);
}

/// Paging by cursor walks every submission exactly once, in order, even when a page ends in the
/// middle of a batch entry; a player filter pages the same way.
#[tokio::test]
async fn audit_log_pages_through_batches_by_cursor() {
    let app = spawn_app().await;
    app.board("pg", json!({"submit_limit": null})).await;
    let subs: Vec<_> = (0..40)
        .map(|i| submission("pg", &format!("p{}", i % 4), &format!("s{i}"), 1))
        .collect();
    for r in join_all(subs.iter().map(|s| app.state.submit(s))).await {
        r.unwrap();
    }
    let all = app
        .call(Method::GET, "/admin/boards/pg/log?limit=1000", None, true)
        .await;
    let all: Vec<String> = all.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(all.len(), 40);
    let entries: redis::streams::StreamRangeReply =
        redis::AsyncCommands::xrange_all(&mut app.redis_conn().await, "lb:{pg}:log")
            .await
            .unwrap();
    assert!(entries.ids.len() < 40, "submissions were batched");

    for (filter, want) in [
        ("", all.clone()),
        (
            "&player=p1",
            all.iter()
                .filter(|id| id[1..].parse::<usize>().unwrap() % 4 == 1)
                .cloned()
                .collect(),
        ),
    ] {
        let mut seen = Vec::new();
        let mut cursor = String::new();
        for _ in 0..100 {
            let r = app
                .call(
                    Method::GET,
                    &format!("/admin/boards/pg/log?limit=3{filter}{cursor}"),
                    None,
                    true,
                )
                .await;
            assert_eq!(r.status, 200, "{:?}", r.body);
            for e in r.body["entries"].as_array().unwrap() {
                seen.push(e["id"].as_str().unwrap().to_owned());
            }
            match r.body["next_cursor"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(seen, want, "paged with {filter:?}");
    }
    let bad = app
        .call(Method::GET, "/admin/boards/pg/log?cursor=1-0.x", None, true)
        .await;
    assert_eq!((bad.status.as_u16(), bad.code()), (400, "bad_request"));
}

/// `incr` moves the score with ZINCRBY, yet the exact range still holds: reaching
/// 2^53 − 1 is accepted, one more is refused and changes nothing.
#[tokio::test]
async fn incr_at_the_edge_of_the_exact_range() {
    const MAX: i64 = 9_007_199_254_740_991;
    let app = spawn_app().await;
    app.board("e", json!({"submit_limit": null})).await;
    app.state
        .submit(&submission("e", "a", "a1", MAX - 1))
        .await
        .unwrap();
    let ok = app
        .state
        .submit(&submission("e", "a", "a2", 1))
        .await
        .unwrap();
    assert_eq!(ok.score, MAX);
    let before = app.dump().await;
    for (sid, points) in [("a3", 1), ("a4", 2), ("a5", MAX)] {
        let e = app
            .state
            .submit(&submission("e", "a", sid, points))
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ScoreOutOfRange, "{sid}");
    }
    assert_eq!(
        app.dump().await,
        before,
        "a refused increment changes nothing"
    );
    // A newcomer's increment is checked against the board's extremes, not only its own.
    let e = app
        .state
        .submit(&submission("e", "z", "z1", -MAX))
        .await
        .unwrap();
    assert_eq!(e.score, -MAX);
    assert_eq!(app.get("/v1/boards/e/players/a").await.body["score"], MAX);
    let down = app
        .state
        .submit(&submission("e", "z", "z2", -1))
        .await
        .unwrap_err();
    assert_eq!(down.code, ErrorCode::ScoreOutOfRange);
}

/// Audit entries in the layouts of earlier versions — one submission in its own fields (before
/// batching), a batch as `player id points op score rank` lines (rounds 3 to 5) — are still
/// listed, beside the packed batches of now.
#[tokio::test]
async fn audit_log_lists_entries_written_before_batching() {
    let app = spawn_app().await;
    app.board("o", json!({"submit_limit": null})).await;
    let mut c = app.redis_conn().await;
    let _: String = redis::cmd("XADD")
        .arg("lb:{o}:log")
        .arg("*")
        .arg(&[
            "player",
            "old",
            "points",
            "5",
            "op",
            "incr",
            "score",
            "5",
            "rank",
            "1",
            "season",
            "all",
            "id",
            "o1",
            "time_ms",
            "1700000000000",
        ])
        .query_async(&mut c)
        .await
        .unwrap();
    let _: String = redis::cmd("XADD")
        .arg("lb:{o}:log")
        .arg("*")
        .arg(&[
            "season",
            "all",
            "time_ms",
            "1700000000001",
            "batch",
            "mid m1 3 incr 3 2\nmid m2 1 incr 4 2",
        ])
        .query_async(&mut c)
        .await
        .unwrap();
    app.score("o", "new", 7).await;
    let log = app
        .call(Method::GET, "/admin/boards/o/log?count=10", None, true)
        .await;
    let entries = log.body["entries"].as_array().unwrap();
    let rows: Vec<_> = entries
        .iter()
        .map(|e| (e["player"].as_str().unwrap(), e["points"].as_i64().unwrap()))
        .collect();
    assert_eq!(rows, [("new", 7), ("mid", 1), ("mid", 3), ("old", 5)]);
    assert_eq!(entries[0]["op"], "incr");
    assert_eq!(
        (&entries[1]["id"], &entries[1]["score"]),
        (&json!("m2"), &json!(4))
    );
    assert_eq!(entries[3]["id"], "o1");
    assert_eq!(entries[3]["time_ms"], 1_700_000_000_000_i64);
}

/// One `submit.lua` call with players interleaved, a retry of an id inside the same batch and
/// a refused submission (the script runs each player's submissions together, so the results
/// must still come back in the batch's order): each answer sits at its submission's place, the
/// retry is a duplicate with the first answer, the refusal changes nothing, and the scores are
/// those of the submissions applied once each.
#[tokio::test]
async fn one_batch_with_interleaved_players_answers_in_its_order() {
    let app = spawn_app().await;
    app.board("mix", json!({"max_points_per_submit": 100}))
        .await;
    let mut redis = app.redis_conn().await;
    let script = &scorecast_server::scripts::PLAIN.submit;
    // (player, id, points): alice a1, bob b1, alice a1 again, alice a2, bob b2 refused, carol c1.
    let batch = [
        ("alice", "a1", 10),
        ("bob", "b1", 20),
        ("alice", "a1", 10),
        ("alice", "a2", 5),
        ("bob", "b2", 1000),
        ("carol", "c1", 7),
    ];
    let subs: Vec<_> = batch
        .iter()
        .map(|(player, id, points)| submission("mix", player, id, *points))
        .collect();
    let mut inv = script.key("lb:{mix}:config");
    // The test clock (none), the event asked for, the batch packed as the server packs it.
    inv.arg("")
        .arg("1")
        .arg(scorecast_server::store::pack_submissions(subs.iter()));
    let (reply, event) = unpacked(inv.invoke_async(&mut redis).await.expect("submit.lua"));
    // The results, packed: the season, then 7 fields per submission: status (1 ok, 2
    // duplicate, else an error code) first, the score third; then the change event as
    // published (server/src/store/batch.rs).
    assert_eq!(reply.len(), 1 + 7 * batch.len(), "{reply:?}");
    let field = |i: usize, k: usize| match &reply[1 + 7 * i + k] {
        redis::Value::Int(n) => n.to_string(),
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    };
    let answers: Vec<(String, String)> = (0..batch.len())
        .map(|i| (field(i, 0), field(i, 2)))
        .collect();
    assert_eq!(
        answers[..4],
        [
            ("1".to_string(), "10".to_string()),
            ("1".into(), "20".into()),
            ("2".into(), "10".into()),
            ("1".into(), "15".into()),
        ],
        "{answers:?}"
    );
    assert_eq!(answers[4].0, "points_out_of_range", "{answers:?}");
    assert_eq!(
        answers[5],
        ("1".to_string(), "7".to_string()),
        "{answers:?}"
    );
    // One event for the batch, listing the changes in the order applied (each player's
    // together): the retry and the refusal changed nothing.
    let event: Value = serde_json::from_slice(&event).expect("the event's JSON");
    assert_eq!(event["seq"], 1, "{event}");
    let changes: Vec<(&str, i64)> = event["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| (c["player"].as_str().unwrap(), c["score"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        changes,
        [("alice", 10), ("alice", 15), ("bob", 20), ("carol", 7)]
    );
    // The audit log lists the submissions applied, once each, newest first: not the retry,
    // not the refusal (the entry stores the whole batch; the reader keeps the accepted ones).
    let log = app
        .call(Method::GET, "/admin/boards/mix/log?count=10", None, true)
        .await;
    let logged: Vec<(&str, &str, i64)> = log.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["player"].as_str().unwrap(),
                e["id"].as_str().unwrap(),
                e["score"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        logged,
        [
            ("carol", "c1", 7),
            ("alice", "a2", 15),
            ("bob", "b1", 20),
            ("alice", "a1", 10)
        ]
    );
    // Not asked for, no event comes back (it is still published).
    let dave = submission("mix", "dave", "d1", 3);
    let mut inv = script.key("lb:{mix}:config");
    inv.arg("")
        .arg("")
        .arg(scorecast_server::store::pack_submissions(std::iter::once(
            &dave,
        )));
    let (reply, event) = unpacked(inv.invoke_async(&mut redis).await.expect("submit.lua"));
    assert_eq!(reply.len(), 1 + 7, "{reply:?}");
    assert_eq!(reply[1], redis::Value::Int(1), "{reply:?}");
    assert!(event.is_empty(), "{event:?}");
    for (player, score) in [("alice", 15), ("bob", 20), ("carol", 7)] {
        let r = app.get(&format!("/v1/boards/mix/players/{player}")).await;
        assert_eq!(r.body["score"], score, "{player}: {:?}", r.body);
    }
}

/// `submit.lua`'s reply as the server reads it: the packed results' items, and the event.
fn unpacked(reply: redis::Value) -> (Vec<redis::Value>, Vec<u8>) {
    match reply {
        redis::Value::Array(two) => match &two[..] {
            [redis::Value::BulkString(packed), redis::Value::BulkString(event)] => (
                scorecast_server::reply::unpack(packed).expect("a msgpack array"),
                event.clone(),
            ),
            other => panic!("not the results and the event: {other:?}"),
        },
        other => panic!("not an array: {other:?}"),
    }
}

/// `unavailable` means the outcome is unknown, and a retry with the same id settles it: a
/// submission sent while Redis is paused (SIGSTOP; the server gives up after 3 s) is answered
/// `unavailable`, saying so; once Redis resumes, the retry with its id is acked (a `duplicate`
/// if the first attempt had reached Redis and ran on resume), a second retry is a duplicate, and
/// the score and the log count it once.
#[tokio::test]
async fn unavailable_means_outcome_unknown_and_the_same_id_settles_it() {
    let app = spawn_app().await;
    app.board("stall", json!({"submit_limit": null})).await;
    let mut c = ws::WsClient::connect(&app.ws_url()).await;
    c.hello(&app.token("ann", None)).await;

    let resume = app.redis.pause();
    let r = c.submit("u-1", "stall", 5).await;
    assert_eq!(r["type"], "rejected", "{r}");
    assert_eq!(r["code"], "unavailable", "{r}");
    let message = r["message"].as_str().unwrap_or_default();
    assert!(message.contains("outcome unknown"), "{message}");
    assert!(message.contains("same id"), "{message}");
    drop(resume);

    // Whether the first attempt reached Redis before the server gave up depends on where it
    // waited; either way the retries settle it.
    let first = c.submit("u-1", "stall", 5).await;
    assert_eq!(first["type"], "ack", "{first}");
    assert_eq!(first["score"], 5, "{first}");
    println!("the retry after unavailable: {first}");
    let again = c.submit("u-1", "stall", 5).await;
    assert_eq!(again["type"], "ack", "{again}");
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["score"], 5, "{again}");
    let who = app.get("/v1/boards/stall/players/ann").await;
    assert_eq!(who.body["score"], 5, "{:?}", who.body);
    let log = app
        .call(
            Method::GET,
            "/admin/boards/stall/log?player=ann",
            None,
            true,
        )
        .await;
    assert_eq!(
        log.body["entries"].as_array().map(Vec::len),
        Some(1),
        "{:?}",
        log.body
    );
}
