//! Leaderboards through the HTTP API and the library: the article's examples, ties,
//! precision, seasons, concurrency and bad input.

use std::time::Duration;

use chrono::{Datelike, TimeZone, Utc};
use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::conn::Target;
use scorecast_server::jobs::calendar_season;
use scorecast_server::limiter::{Algorithm, Limiter, Policy};
use scorecast_server::store::Read;
use scorecast_shared::{BoardConfig, Codec, ErrorCode, Order, Reset};
use scorecast_tests::*;
use serde_json::{json, Value};

fn ranks(v: &Value) -> Vec<u64> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rank"].as_u64().unwrap())
        .collect()
}

/// The article's `leaderboardOrdersByScoreDescending`: top 2 is bob, alice; alice is 2nd; an
/// absent player has no rank (404).
#[tokio::test]
async fn leaderboard_orders_by_score_descending() {
    let app = spawn_app().await;
    app.board("game-2048", json!({})).await;
    app.score("game-2048", "alice", 120).await;
    app.score("game-2048", "bob", 95).await;
    app.score("game-2048", "bob", 60).await;

    let top = app.get("/v1/boards/game-2048/top?limit=2").await;
    assert_eq!(
        players(&top.body),
        [("bob".into(), 155), ("alice".into(), 120)]
    );
    let alice = app.get("/v1/boards/game-2048/players/alice").await;
    assert_eq!(alice.body["rank"], 2);
    let nobody = app.get("/v1/boards/game-2048/players/nobody").await;
    assert_eq!((nobody.status.as_u16(), nobody.code()), (404, "not_found"));
}

/// The article's example: alice +120, bob +95, carol +150, bob +60 → bob 155, carol 150,
/// alice 120; alice's rank is 3, her percentile 33.3.
#[tokio::test]
async fn article_example_through_http() {
    let app = spawn_app().await;
    app.board("b", json!({})).await;
    for (p, n) in [("alice", 120), ("bob", 95), ("carol", 150)] {
        app.score("b", p, n).await;
    }
    let last = app.score("b", "bob", 60).await;
    assert_eq!(
        (
            last["score"].as_i64(),
            last["rank"].as_u64(),
            last["previous_rank"].as_u64()
        ),
        (Some(155), Some(1), Some(3))
    );

    let top = app.get("/v1/boards/b/top?limit=3").await;
    assert_eq!(top.status, 200);
    assert_eq!(top.body["total"], 3);
    assert_eq!(top.body["season"], "all");
    assert_eq!(
        players(&top.body),
        [
            ("bob".into(), 155),
            ("carol".into(), 150),
            ("alice".into(), 120)
        ]
    );
    assert_eq!(ranks(&top.body), [1, 2, 3]);
    let alice = app.get("/v1/boards/b/players/alice").await;
    assert_eq!(alice.body["rank"], 3);
    assert_eq!(alice.body["score"], 120);
    assert_eq!(alice.body["percentile"], 33.3);
}

/// The article's `rateLimiterRejectsAfterLimit`: 3 per 10 s, the fourth is refused, another
/// customer is allowed.
#[tokio::test]
async fn rate_limiter_rejects_after_limit() {
    let app = spawn_app().await;
    let limiter = app.state.limiter.clone();
    let policy = Policy {
        name: "api".into(),
        algorithm: Algorithm::SlidingLog,
        limit: 3,
        window_ms: 10_000,
    };
    for _ in 0..3 {
        assert!(limiter.try_acquire(&policy, "c-42").await.unwrap().allowed);
    }
    let fourth = limiter.try_acquire(&policy, "c-42").await.unwrap();
    assert!(!fourth.allowed);
    assert!(fourth.retry_after_ms > 0 && fourth.retry_after_ms <= 10_000);
    assert_eq!(fourth.remaining, 0);
    assert!(limiter.try_acquire(&policy, "c-99").await.unwrap().allowed);
}

/// The window slides, checked against the definition (a request is allowed when
/// fewer than `limit` allowed requests lie in `(now − window, now]`) on requests 700 ms apart
/// for 35 s of injected time, starting off any multiple of the window: a fixed-window limiter,
/// whatever its alignment, lets a second burst through right after its boundary and fails.
/// GCRA, at instants off the multiples too: one request per emission interval after the burst.
#[tokio::test]
async fn rate_limiter_window_slides_with_injected_clock() {
    let redis = start_redis();
    let conn = scorecast_server::startup::connect(&Target::Single(redis.url()))
        .await
        .unwrap();
    let start = 1_700_000_003_700;
    let clock = Clock::manual(start);
    let limiter = Limiter::new(conn, clock.clone());
    let (limit, window) = (3usize, 10_000i64);
    let policy = Policy {
        name: "slide".into(),
        algorithm: Algorithm::SlidingLog,
        limit: limit as u32,
        window_ms: window as u64,
    };
    let mut allowed_at: Vec<i64> = Vec::new();
    for step in 0..50 {
        let t = step * 700;
        clock.set(start + t);
        let in_window: Vec<i64> = allowed_at
            .iter()
            .copied()
            .filter(|&a| a > t - window)
            .collect();
        let expect = in_window.len() < limit;
        let got = limiter.try_acquire(&policy, "c-42").await.unwrap();
        assert_eq!(
            got.allowed, expect,
            "request at +{t} ms after {allowed_at:?}"
        );
        if expect {
            allowed_at.push(t);
            assert_eq!(
                got.remaining as usize,
                limit - in_window.len() - 1,
                "at +{t}"
            );
        } else {
            // Allowed again exactly when the oldest request in the window leaves it.
            assert_eq!(
                got.retry_after_ms as i64,
                in_window[0] + window - t,
                "at +{t}"
            );
        }
    }
    assert_eq!(
        allowed_at,
        [0, 700, 1400, 10500, 11200, 11900, 21000, 21700, 22400, 31500, 32200, 32900]
    );

    let gcra = Policy {
        name: "gcra".into(),
        algorithm: Algorithm::Gcra,
        limit: 3,
        window_ms: 10_000,
    };
    clock.set(start + 100_000);
    for _ in 0..3 {
        assert!(limiter.try_acquire(&gcra, "c-42").await.unwrap().allowed);
    }
    assert!(!limiter.try_acquire(&gcra, "c-42").await.unwrap().allowed);
    clock.set(start + 103_000); // less than one emission interval (3333 ms) later
    assert!(!limiter.try_acquire(&gcra, "c-42").await.unwrap().allowed);
    clock.set(start + 103_400); // one interval: one request, not a fresh burst
    assert!(limiter.try_acquire(&gcra, "c-42").await.unwrap().allowed);
    assert!(!limiter.try_acquire(&gcra, "c-42").await.unwrap().allowed);
}

/// N requests raced through two server instances against a limit L: exactly L are allowed,
/// for the public-read limiter over HTTP and for a board's submit_limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_race_of_n_requests_against_limit_l_allows_exactly_l() {
    const N: usize = 60;
    const L: u32 = 17;
    let limit = |s: &mut Settings| {
        s.public_limit.limit = L;
        s.public_limit.window_ms = 600_000;
    };
    let app = spawn_app_with(limit, Clock::Redis).await;
    let b = app.second_instance_with(limit).await;
    app.board(
        "lim",
        json!({"submit_limit": {"limit": L, "window_ms": 600_000}}),
    )
    .await;

    let urls = [app.url("/v1/boards/lim/top"), b.url("/v1/boards/lim/top")];
    let reads = (0..N).map(|i| {
        let (http, url) = (app.http.clone(), urls[i % 2].clone());
        async move { http.get(url).send().await.unwrap().status().as_u16() }
    });
    let statuses = futures_util::future::join_all(reads).await;
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        L as usize,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 429).count(),
        N - L as usize
    );

    let states = [app.state.clone(), b.state.clone()];
    let submits = (0..N).map(|i| {
        let st = states[i % 2].clone();
        tokio::spawn(async move {
            st.submit(&submission("lim", "p", &format!("s{i}"), 1))
                .await
        })
    });
    let mut ok = 0;
    for r in futures_util::future::join_all(submits).await {
        match r.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(e.code, ErrorCode::RateLimited),
        }
    }
    assert_eq!(ok, L as usize);
    assert_eq!(
        app.get("/v1/boards/lim/players/p").await.body["score"].as_i64(),
        None,
        "read limit reached from this address"
    );
    let score = app
        .get_from([127, 0, 0, 2], "/v1/boards/lim/players/p")
        .await;
    assert_eq!(score.body["score"], L, "{:?}", score.body);
}

/// Two requests in the same millisecond are two entries (members are unique, not the time).
#[tokio::test]
async fn sliding_log_counts_requests_in_the_same_millisecond() {
    let redis = start_redis();
    let conn = scorecast_server::startup::connect(&Target::Single(redis.url()))
        .await
        .unwrap();
    let limiter = Limiter::new(conn, Clock::manual(5_000));
    let policy = Policy {
        name: "same-ms".into(),
        algorithm: Algorithm::SlidingLog,
        limit: 2,
        window_ms: 1000,
    };
    assert!(limiter.try_acquire(&policy, "x").await.unwrap().allowed);
    assert!(limiter.try_acquire(&policy, "x").await.unwrap().allowed);
    assert!(!limiter.try_acquire(&policy, "x").await.unwrap().allowed);
}

/// Ties on a `desc` board without tie-break follow Redis's member order: zoe before anna.
#[tokio::test]
async fn ties_without_tie_break_follow_redis_order() {
    let app = spawn_app().await;
    app.board("t", json!({})).await;
    app.score("t", "anna", 100).await;
    app.score("t", "zoe", 100).await;
    let top = app.get("/v1/boards/t/top").await;
    assert_eq!(
        players(&top.body),
        [("zoe".into(), 100), ("anna".into(), 100)]
    );
}

/// `earliest`: whoever reached the score first ranks higher, also after increments, and the
/// time a score was reached is reported.
#[tokio::test]
async fn earliest_tie_break_ranks_who_got_there_first() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("e", json!({"tie_break": "earliest", "resolution_ms": 1000}))
        .await;
    app.score("e", "zoe", 50).await;
    clock.advance(2_000);
    app.score("e", "anna", 100).await;
    clock.advance(2_000);
    app.score("e", "zoe", 50).await; // zoe reaches 100 later than anna
    let top = app.get("/v1/boards/e/top").await;
    assert_eq!(
        players(&top.body),
        [("anna".into(), 100), ("zoe".into(), 100)]
    );
    assert_eq!(top.body["entries"][0]["reached_ms"], 1_700_000_002_000i64);
    assert_eq!(top.body["entries"][1]["reached_ms"], 1_700_000_004_000i64);

    // And on an ascending (speedrun) board with op best: the first to post the time wins.
    app.board(
        "run",
        json!({"tie_break": "earliest", "order": "asc", "op": "best"}),
    )
    .await;
    app.score("run", "zed", 9000).await;
    clock.advance(1000);
    app.score("run", "amy", 9000).await;
    clock.advance(1000);
    app.score("run", "zed", 9500).await; // worse time: kept 9000 and its time
    let top = app.get("/v1/boards/run/top").await;
    assert_eq!(
        players(&top.body),
        [("zed".into(), 9000), ("amy".into(), 9000)]
    );
}

/// `shared` ranking: equal points share a rank: 1, 2, 2, 4 — in top, player and around reads.
#[tokio::test]
async fn shared_ranking_gives_1_2_2_4() {
    let app = spawn_app().await;
    for tb in ["none", "earliest"] {
        let b = format!("s-{tb}");
        app.board(&b, json!({"ranking": "shared", "tie_break": tb}))
            .await;
        for (p, n) in [("a", 300), ("b", 200), ("c", 200), ("d", 100)] {
            app.score(&b, p, n).await;
        }
        let top = app.get(&format!("/v1/boards/{b}/top")).await;
        assert_eq!(ranks(&top.body), [1, 2, 2, 4], "{tb}");
        let page2 = app
            .get(&format!("/v1/boards/{b}/top?offset=2&limit=2"))
            .await;
        assert_eq!(ranks(&page2.body), [2, 4], "{tb}");
        for p in ["b", "c"] {
            assert_eq!(
                app.get(&format!("/v1/boards/{b}/players/{p}")).await.body["rank"],
                2,
                "{tb} {p}"
            );
        }
    }
}

/// The largest exact total is accepted; one more is refused and the board is unchanged.
#[tokio::test]
async fn precision_limit_is_enforced_not_rounded() {
    let app = spawn_app().await;
    app.board("p", json!({})).await;
    let max = (1i64 << 53) - 1;
    app.score("p", "x", max - 10).await;
    let ok = app.score("p", "x", 10).await;
    assert_eq!(ok["score"], max);
    let before = app.dump().await;
    let r = app
        .admin(
            Method::POST,
            "/admin/boards/p/players/x/score",
            json!({"points": 1}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "score_out_of_range"));
    assert_eq!(app.dump().await, before);
    assert_eq!(app.get("/v1/boards/p/players/x").await.body["score"], max);

    // With the tie-break packing the range is 0 ..= 2^(53-T) - 1.
    app.board("pe", json!({"tie_break": "earliest", "time_bits": 26}))
        .await;
    let top = (1i64 << 27) - 1;
    assert_eq!(app.score("pe", "y", top).await["score"], top);
    let before = app.dump().await;
    let r = app
        .admin(
            Method::POST,
            "/admin/boards/pe/players/y/score",
            json!({"points": 1}),
        )
        .await;
    assert_eq!(r.code(), "score_out_of_range");
    assert_eq!(app.dump().await, before);
}

/// Increments raced through two server instances (each with its own batcher, so nothing in
/// one process orders them) on a plain and on an `earliest` board (read, decode, add,
/// re-encode): 2 × 4 tasks × 250 increments of 1 end at exactly 2000, and every increment saw
/// its own previous total — the acks' scores are exactly 1..=2000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_increments_are_atomic() {
    let app = spawn_app().await;
    // No submit limit: 2000 submissions from one player at once.
    app.board("race", json!({"submit_limit": null})).await;
    let mut tasks = Vec::new();
    let b = app.second_instance().await;
    app.board(
        "race-e",
        json!({"tie_break": "earliest", "submit_limit": null}),
    )
    .await;
    for board in ["race", "race-e"] {
        for (n, st) in [app.state.clone(), b.state.clone()].into_iter().enumerate() {
            for t in 0..4 {
                let st = st.clone();
                tasks.push(tokio::spawn(async move {
                    let mut scores = Vec::new();
                    for i in 0..250 {
                        let s = submission(board, "p", &format!("i{n}-t{t}-{i}"), 1);
                        scores.push(st.submit(&s).await.unwrap().score);
                    }
                    scores
                }));
            }
        }
        let mut scores = Vec::new();
        for t in tasks.drain(..) {
            scores.extend(t.await.unwrap());
        }
        scores.sort_unstable();
        assert_eq!(scores, (1..=2000).collect::<Vec<i64>>(), "{board}");
        assert_eq!(
            app.get(&format!("/v1/boards/{board}/players/p")).await.body["score"],
            2000,
            "{board}"
        );
    }
}

/// 8 tasks on two server instances submitting the same id count it once, on a plain and on an
/// `earliest` board; every answer carries the first result, and exactly one is not a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_submission_id_counts_once() {
    let app = spawn_app().await;
    let b = app.second_instance().await;
    app.board("dup", json!({})).await;
    app.board("dup-e", json!({"tie_break": "earliest"})).await;
    for board in ["dup", "dup-e"] {
        let mut tasks = Vec::new();
        for i in 0..8 {
            let st = if i % 2 == 0 { &app.state } else { &b.state }.clone();
            tasks.push(tokio::spawn(async move {
                let s = submission(board, "p", "c-17", 60);
                st.submit(&s).await.unwrap()
            }));
        }
        let mut firsts = 0;
        for t in tasks {
            let a = t.await.unwrap();
            assert_eq!((a.score, a.rank), (60, 1), "{board}");
            firsts += usize::from(!a.duplicate);
        }
        assert_eq!(firsts, 1, "{board}");
        assert_eq!(
            app.get(&format!("/v1/boards/{board}/players/p")).await.body["score"],
            60
        );
    }
    // The same id for another player is another submission.
    let other = submission("dup", "q", "c-17", 5);
    assert!(!app.state.submit(&other).await.unwrap().duplicate);
}

/// The board's submit_limit refuses the (limit+1)th submission with retry_after, changes
/// nothing, and a retried success is answered from dedup, never rate_limited.
#[tokio::test]
async fn submit_limit_and_dedup_order() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board(
        "lim",
        json!({"submit_limit": {"limit": 2, "window_ms": 1000}, "max_points_per_submit": 100}),
    )
    .await;
    let sub = |sid: &str, points: i64| submission("lim", "p", sid, points);
    app.state.submit(&sub("a", 1)).await.unwrap();
    app.state.submit(&sub("b", 1)).await.unwrap();
    let before = app.dump().await;
    let e = app.state.submit(&sub("c", 1)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::RateLimited);
    assert_eq!(e.retry_after_ms(), Some(1000));
    assert_eq!(
        app.dump().await,
        before,
        "a refused submission changes nothing"
    );
    let again = app.state.submit(&sub("b", 1)).await.unwrap();
    assert!(again.duplicate, "dedup comes before the limiter");
    // Too many points for this board: refused whatever the limiter says.
    clock.advance(1000);
    let e = app.state.submit(&sub("d", 101)).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::PointsOutOfRange);
    assert_eq!(app.state.submit(&sub("e", 100)).await.unwrap().score, 102);
}

/// `op: best` keeps the better score, `op: set` overwrites; the admin may override the op.
#[tokio::test]
async fn ops_best_and_set() {
    let app = spawn_app().await;
    app.board("best", json!({"op": "best"})).await;
    app.score("best", "p", 50).await;
    assert_eq!(app.score("best", "p", 40).await["score"], 50);
    assert_eq!(app.score("best", "p", 70).await["score"], 70);
    let r = app
        .admin(
            Method::POST,
            "/admin/boards/best/players/p/score",
            json!({"points": 5, "op": "set"}),
        )
        .await;
    assert_eq!(r.body["score"], 5);
    app.board("asc", json!({"op": "best", "order": "asc"}))
        .await;
    app.score("asc", "p", 50).await;
    assert_eq!(app.score("asc", "p", 60).await["score"], 50);
    assert_eq!(app.score("asc", "p", 30).await["score"], 30);
}

/// Around a player: 2r+1 rows even at the edges; friends: only present ids, in rank order.
#[tokio::test]
async fn around_and_friends() {
    let app = spawn_app().await;
    app.board("ar", json!({})).await;
    for i in 1..=10 {
        app.score("ar", &format!("p{i:02}"), i * 10).await;
    }
    let mid = app.get("/v1/boards/ar/players/p05/around?radius=2").await;
    assert_eq!(ranks(&mid.body), [4, 5, 6, 7, 8]);
    let top = app.get("/v1/boards/ar/players/p10/around?radius=2").await;
    assert_eq!(ranks(&top.body), [1, 2, 3, 4, 5]);
    let bottom = app.get("/v1/boards/ar/players/p01/around?radius=2").await;
    assert_eq!(ranks(&bottom.body), [6, 7, 8, 9, 10]);
    let all = app.get("/v1/boards/ar/players/p01/around?radius=25").await;
    assert_eq!(all.body["entries"].as_array().unwrap().len(), 10);
    let absent = app.get("/v1/boards/ar/players/zz/around").await;
    assert_eq!(absent.body["entries"], json!([]));
    let friends = app.get("/v1/boards/ar/players?ids=p02,zz,p09").await;
    assert_eq!(
        players(&friends.body),
        [("p09".into(), 90), ("p02".into(), 20)]
    );
}

/// Display names come from the token's `name` claim: a player whose token says "Alice A."
/// submits over WebSocket (the message has no name field) and reads show the name.
#[tokio::test]
async fn names_come_from_the_token() {
    let app = spawn_app().await;
    app.board("n", json!({})).await;
    let mut alice = scorecast_tests::ws::WsClient::connect(&app.ws_url()).await;
    let w = alice.hello(&app.token("alice", Some("Alice A."))).await;
    assert_eq!(w["player"], "alice", "{w}");
    // A `name` field in the message is not the player's to choose: it is ignored.
    alice
        .send_json(
            json!({"type": "submit", "id": "1", "board": "n", "points": 3, "name": "Mallory"}),
        )
        .await;
    assert_eq!(alice.answer_to("1").await["type"], "ack");
    let top = app.get("/v1/boards/n/top").await;
    assert_eq!(top.body["entries"][0]["name"], "Alice A.", "{:?}", top.body);
    let me = app.get("/v1/boards/n/players?ids=alice").await;
    assert_eq!(me.body["entries"][0]["name"], "Alice A.");
}

/// Manual seasons on a `never` board: rollover starts a new season, the old one stays readable
/// with `season=`, duplicates, names of dropped seasons and calendar boards are refused with
/// `conflict`.
#[tokio::test]
async fn manual_rollover_keeps_past_seasons_readable() {
    let app = spawn_app().await;
    app.board("m", json!({})).await;
    app.score("m", "a", 10).await;
    let r = app.rollover("m", "s2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["previous_season"], "all");
    app.score("m", "b", 5).await;
    let cur = app.get("/v1/boards/m/top").await;
    assert_eq!(
        (cur.body["season"].as_str(), players(&cur.body)),
        (Some("s2"), vec![("b".into(), 5)])
    );
    let old = app.get("/v1/boards/m/top?season=all").await;
    assert_eq!(players(&old.body), [("a".into(), 10)]);
    let seasons = app.get("/v1/boards/m/seasons").await;
    let names: Vec<_> = seasons.body["seasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["season"].as_str().unwrap().to_owned(),
                s["current"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("all".into(), false), ("s2".into(), true)]);
    let again = app.rollover("m", "s2").await;
    assert_eq!(again.code(), "conflict");
    let unknown = app.get("/v1/boards/m/top?season=s9").await;
    assert_eq!(
        (unknown.status.as_u16(), unknown.code()),
        (404, "unknown_season")
    );
    app.board("cal", json!({"reset": "daily"})).await;
    let refused = app.rollover("cal", "x").await;
    assert_eq!(refused.code(), "conflict");

    // A name the board had before stays taken once keep_seasons dropped its season: a banned
    // player's held entry and the rewards of the old season must not carry into a new one.
    app.board("k", json!({"keep_seasons": 0})).await;
    app.score("k", "p", 10).await;
    assert_eq!(app.rollover("k", "n1").await.status, 200);
    assert_eq!(
        app.get("/v1/boards/k/top?season=all").await.code(),
        "unknown_season",
        "dropped"
    );
    let before = app.dump().await;
    let reused = app.rollover("k", "all").await;
    assert_eq!(
        (reused.status.as_u16(), reused.code()),
        (409, "conflict"),
        "{:?}",
        reused.body
    );
    assert!(reused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("before"));
    assert_eq!(app.dump().await, before, "a refused rollover changed a key");
    assert_eq!(app.rollover("k", "n2").await.status, 200);
    assert_eq!(app.rollover("k", "n1").await.code(), "conflict");
}

/// Calendar seasons come from the clock inside the script: at the UTC boundary the next
/// submission lands in the next season, the old one stays readable, and only keep_seasons
/// past seasons are kept.
#[tokio::test]
async fn daily_seasons_turn_over_exactly_at_midnight_utc() {
    let midnight = Utc
        .with_ymd_and_hms(2026, 3, 1, 0, 0, 0)
        .unwrap()
        .timestamp_millis();
    let clock = Clock::manual(midnight - 1);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("d", json!({"reset": "daily", "keep_seasons": 1}))
        .await;
    // Before anyone scores, the current season is still listed, with its start.
    let seasons = app.get("/v1/boards/d/seasons").await;
    assert_eq!(
        seasons.body["seasons"],
        json!([{"season": "2026-02-28", "start_ms": midnight - 86_400_000, "current": true}])
    );
    assert_eq!(app.score("d", "a", 1).await["season"], "2026-02-28");
    clock.advance(1);
    assert_eq!(app.score("d", "a", 2).await["season"], "2026-03-01");
    let old = app.get("/v1/boards/d/players/a?season=2026-02-28").await;
    assert_eq!(old.body["score"], 1);
    clock.advance(86_400_000);
    app.score("d", "a", 3).await;
    clock.advance(86_400_000);
    app.score("d", "a", 4).await;
    // current + 1 past season kept; the oldest ones are gone.
    assert_eq!(
        app.get("/v1/boards/d/top?season=2026-03-02").await.status,
        200
    );
    assert_eq!(
        app.get("/v1/boards/d/top?season=2026-02-28").await.code(),
        "unknown_season"
    );
    assert!(!app.key_exists("lb:{d}:s:2026-02-28").await);
}

/// Weekly and monthly seasons turn over at the exact instant (UTC), in the submission script:
/// the last millisecond of a week or month scores in the old season, the first in the new one
/// (ISO weeks across years too), and the season's `start_ms` is the boundary. The Rust
/// calendar that schedules rollovers names the same seasons at the same instants.
#[tokio::test]
async fn weekly_and_monthly_seasons_turn_over_at_the_exact_instant() {
    let clock = Clock::manual(0);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    let ms = |y, mo, d| {
        Utc.with_ymd_and_hms(y, mo, d, 0, 0, 0)
            .unwrap()
            .timestamp_millis()
    };
    let cases = [
        // board, reset, boundary, season before, season from the boundary on
        (
            "w1",
            Reset::Weekly,
            ms(2024, 12, 30),
            "2024-W52",
            "2025-W01",
        ),
        ("w2", Reset::Weekly, ms(2021, 1, 4), "2020-W53", "2021-W01"),
        ("w3", Reset::Weekly, ms(2026, 3, 2), "2026-W09", "2026-W10"),
        ("m1", Reset::Monthly, ms(2025, 1, 1), "2024-12", "2025-01"),
        ("m2", Reset::Monthly, ms(2024, 3, 1), "2024-02", "2024-03"),
    ];
    for (board, reset, boundary, before, after) in cases {
        clock.set(boundary - 1);
        let r = if reset == Reset::Weekly {
            "weekly"
        } else {
            "monthly"
        };
        app.board(board, json!({"reset": r})).await;
        assert_eq!(app.score(board, "a", 1).await["season"], before, "{board}");
        assert_eq!(
            calendar_season(reset, boundary - 1).map(|s| s.0).as_deref(),
            Some(before)
        );
        clock.set(boundary);
        assert_eq!(app.score(board, "a", 1).await["season"], after, "{board}");
        let (name, start, _) = calendar_season(reset, boundary).unwrap();
        assert_eq!((name.as_str(), start), (after, boundary), "{board}");
        let seasons = app.get(&format!("/v1/boards/{board}/seasons")).await;
        let current = seasons.body["seasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["current"] == true)
            .cloned()
            .unwrap();
        assert_eq!(
            (current["season"].as_str(), current["start_ms"].as_i64()),
            (Some(after), Some(boundary)),
            "{board}"
        );
        let old = app
            .get(&format!("/v1/boards/{board}/players/a?season={before}"))
            .await;
        assert_eq!(old.body["score"], 1, "{board}");
    }
}

/// The Lua calendar (season names) agrees with chrono on random instants, weekly and monthly.
#[tokio::test]
async fn lua_calendar_agrees_with_chrono() {
    let clock = Clock::manual(0);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("w", json!({"reset": "weekly"})).await;
    app.board("mo", json!({"reset": "monthly"})).await;
    let mut x: u64 = 0x2545F4914F6CDD1D;
    for _ in 0..150 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ms = (x % 4_102_444_800_000) as i64; // 1970 ..= 2100
        clock.set(ms);
        let t = Utc.timestamp_millis_opt(ms).unwrap();
        let week = t.iso_week();
        let want_w = format!("{:04}-W{:02}", week.year(), week.week());
        let want_m = format!("{:04}-{:02}", t.year(), t.month());
        let got_w = app
            .state
            .store
            .read(
                &id("w"),
                None,
                Read::Top {
                    offset: 0,
                    limit: 0,
                },
            )
            .await
            .unwrap()
            .season;
        let got_m = app
            .state
            .store
            .read(
                &id("mo"),
                None,
                Read::Top {
                    offset: 0,
                    limit: 0,
                },
            )
            .await
            .unwrap()
            .season;
        assert_eq!((got_w, got_m), (want_w, want_m), "at {t}");
    }
}

/// The Lua packing and the Rust codec agree on random points and times (both orders).
#[tokio::test]
async fn lua_and_rust_codecs_agree() {
    let start = 1_700_000_000_000i64;
    let clock = Clock::manual(start);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    let mut c = app.redis_conn().await;
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (b, order) in [("cd", Order::Desc), ("ca", Order::Asc)] {
        for bits in [8u32, 26, 40] {
            let board = format!("{b}{bits}");
            clock.set(start); // the season `all` starts when the board is created
            let cfg: BoardConfig = serde_json::from_value(json!({"tie_break": "earliest", "op": "set", "order": order, "time_bits": bits, "resolution_ms": 1})).unwrap();
            app.board(&board, serde_json::to_value(&cfg).unwrap()).await;
            let codec = Codec::earliest(order, bits);
            for i in 0..40 {
                let points = (next() % (codec.max_points() as u64 + 1)) as i64;
                let t = (next() % (1u64 << bits.min(30))) as i64;
                clock.set(start + t);
                let r = app
                    .admin(
                        Method::POST,
                        &format!("/admin/boards/{board}/players/p{i}/score"),
                        json!({"points": points}),
                    )
                    .await;
                assert_eq!(r.body["score"], points);
                let raw: f64 = redis::cmd("ZSCORE")
                    .arg(format!("lb:{{{board}}}:s:all"))
                    .arg(format!("p{i}"))
                    .query_async(&mut c)
                    .await
                    .unwrap();
                assert_eq!(
                    raw,
                    codec.encode(points, t).unwrap(),
                    "{board} points {points} t {t}"
                );
                assert_eq!(codec.decode(raw).unwrap(), (points, t));
            }
        }
    }
}

/// Changing how stored scores are read is refused once a board has scores, scores held by a
/// ban included; other changes pass.
#[tokio::test]
async fn config_change_that_reinterprets_scores_is_refused() {
    let app = spawn_app().await;
    app.board("c", json!({})).await;
    app.board("c", json!({"order": "asc"})).await; // no scores yet: fine
    app.score("c", "a", 1).await;
    app.board("ce", json!({"tie_break": "earliest", "time_bits": 26}))
        .await;
    app.score("ce", "a", 1).await;
    // A board whose only score is held aside by a ban: the score comes back when it is lifted.
    app.board("ch", json!({})).await;
    app.score("ch", "h", 1000).await;
    let ban = app
        .admin(Method::PUT, "/admin/bans/h", json!({"board": "ch"}))
        .await;
    assert!(ban.status.is_success(), "{:?}", ban.body);
    let before = app.dump().await;
    for (board, change) in [
        ("ch", json!({"tie_break": "earliest"})),
        ("ch", json!({"order": "asc"})),
        ("c", json!({"order": "desc"})),
        ("c", json!({"order": "asc", "tie_break": "earliest"})),
        ("ce", json!({"tie_break": "none"})),
        ("ce", json!({"tie_break": "earliest", "resolution_ms": 10})),
        ("ce", json!({"tie_break": "earliest", "time_bits": 20})),
        ("ce", json!({"tie_break": "earliest", "order": "asc"})),
    ] {
        let r = app
            .admin(
                Method::PUT,
                &format!("/admin/boards/{board}"),
                change.clone(),
            )
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (409, "conflict"),
            "{board} {change}"
        );
        assert_eq!(app.dump().await, before, "{board} {change}");
    }
    let ok = app
        .admin(
            Method::PUT,
            "/admin/boards/c",
            json!({"order": "asc", "max_points_per_submit": 5}),
        )
        .await;
    assert_eq!(ok.status, 200);
    let bad = app
        .admin(
            Method::PUT,
            "/admin/boards/c2",
            json!({"tie_break": "earliest", "reset": "monthly", "time_bits": 20}),
        )
        .await;
    assert_eq!(bad.code(), "bad_request");
    let list = app.get("/v1/boards").await;
    let ids: Vec<_> = list.body["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c", "ce", "ch"], "the refused c2 was not created");
    // Lifted, the held score comes back as stored.
    let lift = app
        .admin(Method::DELETE, "/admin/bans/h?board=ch", json!(null))
        .await;
    assert!(lift.status.is_success(), "{:?}", lift.body);
    assert_eq!(app.get("/v1/boards/ch/players/h").await.body["score"], 1000);
}

/// The audit log lists accepted submissions newest first; DELETE removes a player.
#[tokio::test]
async fn audit_log_and_delete() {
    let app = spawn_app().await;
    app.board("l", json!({})).await;
    app.score("l", "a", 5).await;
    app.score("l", "b", 7).await;
    let log = app
        .call(Method::GET, "/admin/boards/l/log?count=10", None, true)
        .await;
    let entries = log.body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0]["player"].as_str(), entries[0]["points"].as_i64()),
        (Some("b"), Some(7))
    );
    let del = app
        .call(Method::DELETE, "/admin/boards/l/players/a", None, true)
        .await;
    assert_eq!(del.status, 204);
    assert_eq!(app.get("/v1/boards/l/players/a").await.status, 404);
    assert_eq!(
        app.call(Method::DELETE, "/admin/boards/l/players/a", None, true)
            .await
            .status,
        404
    );
}

/// Every class of bad input gets its code and changes nothing in Redis.
#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    app.board("b", json!({"max_points_per_submit": 1000})).await;
    app.score("b", "alice", 10).await;
    let before = app.dump().await;
    let score = |board: &str, player: &str| format!("/admin/boards/{board}/players/{player}/score");
    let long = "a".repeat(65);
    /// method, path, body, with the admin token, expected status and code.
    type Case = (Method, String, Option<Value>, bool, u16, &'static str);
    let cases: Vec<Case> = vec![
        // A configuration is a JSON object: an array (which serde would read field by field)
        // is refused, for a new board and for one that exists.
        (
            Method::PUT,
            "/admin/boards/nb".into(),
            Some(json!([])),
            true,
            400,
            "bad_request",
        ),
        (
            Method::PUT,
            "/admin/boards/b".into(),
            Some(json!(["asc"])),
            true,
            400,
            "bad_request",
        ),
        (
            Method::PUT,
            "/admin/leagues/lg".into(),
            Some(json!([["t1", "t2"]])),
            true,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            score("b", "a%7Bb"),
            Some(json!({"points": 1})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b", "a:b"),
            Some(json!({"points": 1})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b", "a%20b"),
            Some(json!({"points": 1})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b", &long),
            Some(json!({"points": 1})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b%7D", "alice"),
            Some(json!({"points": 1})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 1, "id": ""})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::PUT,
            "/admin/boards/x:y".into(),
            Some(json!({})),
            true,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 1.5})),
            true,
            400,
            "points_out_of_range",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": "12"})),
            true,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": null})),
            true,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 9007199254740992u64})),
            true,
            400,
            "points_out_of_range",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": -9007199254740992i64})),
            true,
            400,
            "points_out_of_range",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 1e300})),
            true,
            400,
            "points_out_of_range",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 1001})),
            true,
            400,
            "points_out_of_range",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({})),
            true,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            score("nope", "alice"),
            Some(json!({"points": 1})),
            true,
            404,
            "unknown_board",
        ),
        (
            Method::POST,
            score("b", "alice"),
            Some(json!({"points": 1})),
            false,
            401,
            "unauthorized",
        ),
        (
            Method::PUT,
            "/admin/boards/b".into(),
            Some(json!({"order": "sideways"})),
            true,
            400,
            "bad_request",
        ),
        (
            Method::PUT,
            "/admin/boards/b".into(),
            Some(json!({"max_points_per_submit": 0})),
            true,
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/boards/nope/top".into(),
            None,
            false,
            404,
            "unknown_board",
        ),
        (
            Method::GET,
            "/v1/boards/b/top?limit=0".into(),
            None,
            false,
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/boards/b/top?limit=abc".into(),
            None,
            false,
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/boards/b%7B/top".into(),
            None,
            false,
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            "/v1/guest".into(),
            Some(json!({"name": "ann"})),
            false,
            404,
            "not_found",
        ),
    ];
    for (method, path, body, admin, status, code) in cases {
        let r = app.call(method.clone(), &path, body.clone(), admin).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{method} {path} {body:?}"
        );
        assert_eq!(app.dump().await, before, "{method} {path} changed Redis");
    }

    // A wrong admin token, and a malformed JSON body.
    let wrong = app
        .http
        .post(app.url(&score("b", "alice")))
        .bearer_auth("x".repeat(43))
        .json(&json!({"points": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let malformed = app
        .http
        .post(app.url(&score("b", "alice")))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body("{\"points\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    // A body above 64 KiB.
    let big = json!({"points": 1, "pad": "x".repeat(70 * 1024)});
    let r = app
        .call(Method::POST, &score("b", "alice"), Some(big), true)
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (413, "payload_too_large"));
    assert_eq!(app.dump().await, before);
}

/// Public reads are limited per client address: one address spending its limit leaves another
/// untouched (a global limiter fails here). Every answer carries the IETF headers (a refused
/// read, which counted, too), the 429 its
/// `Retry-After`; CORS reaches a 429 and a real 404 alike; admin endpoints are not limited.
#[tokio::test]
async fn public_reads_are_rate_limited_per_address() {
    let app = spawn_app_with(
        |s| {
            s.public_limit.limit = 3;
            s.public_limit.window_ms = 60_000;
        },
        Clock::Redis,
    )
    .await;
    app.board("b", json!({})).await;
    for remaining in [2, 1, 0] {
        let r = app.get("/v1/boards/b/top").await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.headers["ratelimit-remaining"],
            remaining.to_string().as_str()
        );
        assert_eq!(r.headers["ratelimit-limit"], "3");
        let reset: u64 = r.headers["ratelimit-reset"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&reset), "RateLimit-Reset {reset}");
    }
    // A page of the server's own origin (the default allow-list) reads the refusal below.
    let own = format!("http://127.0.0.1:{}", app.port);
    let r = app
        .request_from(
            [127, 0, 0, 1],
            Method::GET,
            "/v1/boards/b/top",
            &[("origin", &own)],
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (429, "rate_limited"));
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(r.headers["ratelimit-limit"], "3");
    assert_eq!(r.headers["ratelimit-remaining"], "0");
    let reset: u64 = r.headers["ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&reset), "RateLimit-Reset {reset}");
    // The allowed origin's browser can read the refusal and its headers.
    assert_eq!(r.headers["access-control-allow-origin"], own.as_str());
    assert!(r.headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase()
        .contains("ratelimit-remaining"));

    // Another address has its own allowance.
    let other = app.get_from([127, 0, 0, 2], "/v1/boards/b/top").await;
    assert_eq!(other.status, 200, "{:?}", other.body);
    assert_eq!(other.headers["ratelimit-remaining"], "2");
    // …and the first is still refused.
    assert_eq!(app.get("/v1/boards/b/top").await.status, 429);

    // CORS on a real 404 (from a third address, so it is not a 429).
    let unknown = app
        .request_from(
            [127, 0, 0, 3],
            Method::GET,
            "/v1/boards/nope/top",
            &[("origin", &own)],
        )
        .await;
    assert_eq!(
        (unknown.status.as_u16(), unknown.code()),
        (404, "unknown_board")
    );
    assert_eq!(unknown.headers["access-control-allow-origin"], own.as_str());
    // A refused read counted against the address: it says so too, as a bad parameter does.
    assert_eq!(unknown.headers["ratelimit-remaining"], "2");
    let bad = app
        .get_from([127, 0, 0, 3], "/v1/boards/b/top?limit=0")
        .await;
    assert_eq!((bad.status.as_u16(), bad.code()), (400, "bad_request"));
    assert_eq!(
        (
            &bad.headers["ratelimit-limit"],
            &bad.headers["ratelimit-remaining"]
        ),
        (&"3".parse().unwrap(), &"1".parse().unwrap())
    );

    // Admin endpoints are not limited, and send no CORS headers.
    let admin = app
        .admin(
            Method::POST,
            "/admin/boards/b/players/a/score",
            json!({"points": 1}),
        )
        .await;
    assert_eq!(admin.body["score"], 1);
    assert!(!admin.headers.contains_key("access-control-allow-origin"));
}

/// Ops endpoints: health, readiness (503 when Redis is gone), metrics, OpenAPI.
#[tokio::test]
async fn ops_endpoints() {
    let mut app = spawn_app().await;
    app.board("b", json!({})).await;
    app.score("b", "a", 1).await;
    assert_eq!(app.get("/healthz").await.status, 200);
    assert_eq!(app.get("/readyz").await.status, 200);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("scorecast_submissions_total{outcome=\"ok\"}"),
        "{metrics}"
    );
    let api = app.get("/openapi.json").await;
    assert!(api.body["paths"]["/v1/boards/{board}/top"].is_object());
    assert!(api.body["paths"]["/admin/boards/{board}/players/{player}/score"].is_object());
    // What reached the AOF file survives (not the second `everysec` may hold back).
    app.wait_aof_written().await;
    app.redis.kill();
    let r = app.get("/readyz").await;
    assert_eq!(r.status, 503);
    let r = app
        .admin(
            Method::POST,
            "/admin/boards/b/players/a/score",
            json!({"points": 1}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (503, "unavailable"));
    app.redis.restart().unwrap();
    // The connection manager reconnects by itself.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while app.get("/readyz").await.status != 200 {
        assert!(std::time::Instant::now() < deadline, "no reconnect");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        app.get("/v1/boards/b/players/a").await.body["score"],
        1,
        "AOF kept the score"
    );
}

/// The dev profile offers guest logins and the game-2048 board.
#[tokio::test]
async fn dev_profile_guest_login() {
    let app = spawn_app_with(
        |s| {
            s.dev = true;
            s.finish().unwrap();
        },
        Clock::Redis,
    )
    .await;
    let r = app
        .call(
            Method::POST,
            "/v1/guest",
            Some(json!({"name": "ann"})),
            false,
        )
        .await;
    assert_eq!(r.body["player"], "guest-ann");
    // A nameless guest would be one player shared by all of them.
    let nameless = app
        .call(Method::POST, "/v1/guest", Some(json!({"name": ""})), false)
        .await;
    assert_eq!(
        (nameless.status.as_u16(), nameless.code()),
        (400, "invalid_id"),
        "{:?}",
        nameless.body
    );
    let player = app
        .state
        .tokens
        .verify(r.body["token"].as_str().unwrap())
        .unwrap();
    assert_eq!(player.id.as_str(), "guest-ann");
    assert_eq!(app.get("/v1/boards/game-2048/top").await.status, 200);
    let bad = app
        .call(
            Method::POST,
            "/v1/guest",
            Some(json!({"name": "a b"})),
            false,
        )
        .await;
    assert_eq!(bad.code(), "invalid_id");
    let unknown = app
        .call(
            Method::POST,
            "/v1/guest",
            Some(json!({"name": "ann", "x": 1})),
            false,
        )
        .await;
    assert_eq!(
        (unknown.status.as_u16(), unknown.code()),
        (400, "bad_request"),
        "{:?}",
        unknown.body
    );
}

/// A board's group-commit batcher retires when idle, so made-up board ids hold no task or
/// memory: every one of 20 unknown boards and the real one gets a batcher, all 21 retire, and
/// the next submission starts a fresh one with nothing refused in between.
#[tokio::test]
async fn idle_batchers_retire_and_restart() {
    let redis = start_redis();
    let conn = scorecast_server::startup::connect(&Target::Single(redis.url()))
        .await
        .unwrap();
    let store = scorecast_server::store::Store::new(conn, Clock::Redis)
        .with_batcher_idle(Duration::from_secs(1));
    let mut c = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let cfg = serde_json::to_string(&BoardConfig::default()).unwrap();
    let _: () = redis::cmd("SET")
        .arg("lb:{real}:config")
        .arg(cfg)
        .query_async(&mut c)
        .await
        .unwrap();

    // All at once, so that none has been idle for its second when they are counted.
    let ghosts = (0..20).map(|n| {
        let store = store.clone();
        async move {
            store
                .submit(&submission(&format!("ghost{n}"), "p", "1", 1))
                .await
        }
    });
    let real = submission("real", "p", "1", 5);
    let (ghosts, real) = tokio::join!(futures_util::future::join_all(ghosts), store.submit(&real));
    assert_eq!(store.batching_boards(), 21);
    for e in ghosts {
        assert_eq!(e.unwrap_err().code, ErrorCode::UnknownBoard);
    }
    assert_eq!(real.unwrap().score, 5);
    eventually("every batcher retires", || async {
        store.batching_boards() == 0
    })
    .await;
    let again = store
        .submit(&submission("real", "p", "2", 5))
        .await
        .unwrap();
    assert_eq!((again.score, again.duplicate), (10, false));
    assert_eq!(store.batching_boards(), 1);
}
