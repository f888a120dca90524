//! Buckets: a board with `bucket_size` places each player, on their first score (or join) of a
//! season, in a bucket of at most that many rivals — atomically in the submission and join
//! scripts, however many instances race — and a player's reads are within their bucket, while
//! operators read any bucket and the whole board. Each season forms new buckets.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures_util::future::join_all;
use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::{spawn_app_with, Api, Resp, TestApp, EVENTUALLY};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;

async fn app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

fn bucketed(n: u32) -> Value {
    json!({"op": "incr", "submit_limit": null, "bucket_size": n})
}

/// A game server's submission for `player` (answered whatever it is).
async fn submit(api: &Api, board: &str, player: &str, id: &str, points: i64) -> Resp {
    api.admin(
        Method::POST,
        &format!("/admin/boards/{board}/players/{player}/score"),
        json!({"points": points, "id": id}),
    )
    .await
}

/// The buckets of `season` as Redis holds them: player -> bucket from the hash, and each
/// bucket's zset members.
async fn buckets(
    app: &TestApp,
    board: &str,
    season: &str,
) -> (BTreeMap<String, u32>, BTreeMap<u32, Vec<String>>) {
    let mut c = app.redis_conn().await;
    let h: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("lb:{{{board}}}:bk:{season}"))
        .query_async(&mut c)
        .await
        .unwrap();
    let of: BTreeMap<String, u32> = h
        .into_iter()
        .filter(|(k, _)| !k.starts_with('#'))
        .map(|(k, v)| (k, v.parse().unwrap()))
        .collect();
    let mut zsets = BTreeMap::new();
    let open = of.values().copied().max().unwrap_or(0);
    for n in 1..=open + 1 {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("lb:{{{board}}}:bk:{season}:{n}"))
            .arg(0)
            .arg(-1)
            .query_async(&mut c)
            .await
            .unwrap();
        if !members.is_empty() {
            zsets.insert(n, members);
        }
    }
    (of, zsets)
}

/// `bucket_size` must be 2–1000: 1, 0 and 1001 are `bad_request` and change no key (a new
/// board is not created, an existing one keeps its config); 2 and 1000 are taken.
#[tokio::test]
async fn bucket_size_is_checked_and_a_bad_one_changes_nothing() {
    let app = app().await;
    app.board("b", bucketed(30)).await;
    let before = app.dump().await;
    for (board, n) in [("b", 1), ("b", 0), ("b", 1001), ("new", 1), ("new", 1001)] {
        let r = app
            .admin(Method::PUT, &format!("/admin/boards/{board}"), bucketed(n))
            .await;
        assert_eq!(r.status, 400, "{board} {n}: {:?}", r.body);
        assert_eq!(r.code(), "bad_request");
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("bucket_size must be 2..=1000"),
            "{:?}",
            r.body
        );
    }
    assert_eq!(
        app.dump().await,
        before,
        "a refused bucket_size changed a key"
    );
    for n in [2, 1000] {
        let r = app.board("b", bucketed(n)).await;
        assert_eq!(r.body["bucket_size"], n);
    }
}

/// Hundreds of players first-score and join at once through two instances (each player both
/// joins and scores, on different instances): every player is in exactly one bucket (the hash
/// and the buckets' zsets agree), no bucket holds more than N, and the buckets are filled in
/// order (all full but the last).
#[tokio::test]
async fn racing_first_scores_and_joins_through_two_instances_fill_buckets_of_at_most_n() {
    let app = app().await;
    let second = app.second_instance_with(|s| s.workers = false).await;
    const N: usize = 7;
    const PLAYERS: usize = 240;
    let mut cfg = bucketed(N as u32);
    cfg["tournament"] = json!({"schedule": {"start_ms": T0 - 1000, "end_ms": T0 + 3_600_000}});
    app.board("race", cfg).await;
    let apis = [
        Api::new(app.port, std::time::Duration::from_secs(60)),
        Api::new(second.port, std::time::Duration::from_secs(60)),
    ];
    let answers = join_all((0..PLAYERS * 2).map(|i| {
        let player = format!("p{}", i / 2);
        // Player p's join goes to one instance and its score to the other.
        let api = &apis[(i + i / 2) % 2];
        async move {
            if i % 2 == 0 {
                let token = api.token(&player, None);
                let path = "/v1/boards/race/join";
                api.call_as(Some(&token), Method::POST, path, None).await
            } else {
                submit(api, "race", &player, "s1", 1 + (i / 2) as i64).await
            }
        }
    }))
    .await;
    for r in &answers {
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let (of, zsets) = buckets(&app, "race", "all").await;
    assert_eq!(of.len(), PLAYERS, "every player has a bucket");
    let mut seen = HashSet::new();
    for (n, members) in &zsets {
        assert!(members.len() <= N, "bucket {n} holds {}", members.len());
        for m in members {
            assert!(seen.insert(m.clone()), "{m} is in two buckets");
            assert_eq!(of[m], *n, "{m}: the hash and the zsets disagree");
        }
    }
    assert_eq!(seen.len(), PLAYERS, "every player scored in their bucket");
    let buckets_used = PLAYERS.div_ceil(N);
    assert_eq!(zsets.len(), buckets_used);
    for (n, members) in &zsets {
        if (*n as usize) < buckets_used {
            assert_eq!(members.len(), N, "bucket {n} was left before it was full");
        }
    }
}

/// A player's reads are within their bucket: `me` (rank and percentile in the bucket, and its
/// number), `around`, and `top?player=`; `top?bucket=n` reads bucket n; a top without either is
/// `bad_request`; a player without a bucket gets `not_found` saying so; the operator's
/// `GET /admin/boards/{b}/top` reads the whole board and any bucket.
#[tokio::test]
async fn reads_are_within_the_players_bucket_and_operators_read_every_ladder() {
    let app = app().await;
    app.board("b", bucketed(3)).await;
    // p1..p3 in bucket 1, p4..p6 in bucket 2, p7 in bucket 3; higher number, more points.
    for i in 1..=7 {
        let r = submit(&app, "b", &format!("p{i}"), "s", i * 10).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    // The submission's rank is within the bucket: p4 was first in bucket 2.
    let r = submit(&app, "b", "p4", "s2", 1).await;
    assert_eq!(r.body["rank"], 3, "{:?}", r.body);

    let me = app.get("/v1/boards/b/players/p5").await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.body["bucket"], 2);
    assert_eq!(me.body["rank"], 2, "{:?}", me.body);
    assert_eq!(me.body["percentile"], 66.7);

    let around = app.get("/v1/boards/b/players/p5/around?radius=5").await;
    assert_eq!(around.body["bucket"], 2);
    let names: Vec<&str> = around.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["player"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p6", "p5", "p4"]);

    let top = app.get("/v1/boards/b/top?player=p2").await;
    assert_eq!(top.body["bucket"], 1);
    assert_eq!(
        top.body["buckets"], 3,
        "the season's buckets: {:?}",
        top.body
    );
    assert_eq!(top.body["total"], 3);
    assert_eq!(top.body["entries"][0]["player"], "p3");
    assert_eq!(top.body["entries"][0]["rank"], 1);
    let top = app.get("/v1/boards/b/top?bucket=3").await;
    assert_eq!(top.body["total"], 1);
    assert_eq!(top.body["buckets"], 3);
    assert_eq!(top.body["entries"][0]["player"], "p7");
    // Past the last bucket: an empty one, and the count says there is none.
    let past = app.get("/v1/boards/b/top?bucket=9").await;
    assert_eq!(past.status, 200, "{:?}", past.body);
    assert_eq!(
        (&past.body["total"], &past.body["buckets"]),
        (&json!(0), &json!(3))
    );

    let bare = app.get("/v1/boards/b/top").await;
    assert_eq!(bare.status, 400, "{:?}", bare.body);
    assert_eq!(bare.code(), "bad_request");
    for path in [
        "/v1/boards/b/players/nobody",
        "/v1/boards/b/players/nobody/around",
        "/v1/boards/b/top?player=nobody",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status, 404, "{path}: {:?}", r.body);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nobody has no bucket"),
            "{path}: {:?}",
            r.body
        );
    }

    let whole = app
        .call(Method::GET, "/admin/boards/b/top?limit=10", None, true)
        .await;
    assert_eq!(whole.status, 200, "{:?}", whole.body);
    assert_eq!(whole.body["total"], 7);
    assert!(whole.body.get("bucket").is_none() && whole.body.get("buckets").is_none());
    assert_eq!(whole.body["entries"][0]["player"], "p7");
    assert_eq!(whole.body["entries"][1]["player"], "p6");
    let two = app
        .call(Method::GET, "/admin/boards/b/top?bucket=2", None, true)
        .await;
    assert_eq!(
        (&two.body["bucket"], &two.body["buckets"]),
        (&json!(2), &json!(3))
    );
    assert_eq!(two.body["entries"][2]["player"], "p4");
    let anon = app.get("/admin/boards/b/top").await;
    assert_eq!(anon.status, 401);
    // The board's admin view counts the whole board.
    let info = app.call(Method::GET, "/admin/boards/b", None, true).await;
    assert_eq!(info.body["size"], 7, "{:?}", info.body);
}

/// Each season forms new buckets: after a rollover the first scorers of the new season fill
/// bucket 1 again, whatever bucket they had; the ended season's buckets stay readable with
/// `?season=` until the season is dropped (keep_seasons), and then their keys go too.
#[tokio::test]
async fn a_new_season_forms_new_buckets_and_old_ones_go_with_their_season() {
    let app = app().await;
    let mut cfg = bucketed(2);
    cfg["keep_seasons"] = json!(1);
    app.board("b", cfg).await;
    for p in ["a", "b", "c"] {
        submit(&app, "b", p, "s0", 5).await;
    }
    let (of, _) = buckets(&app, "b", "all").await;
    assert_eq!(of["c"], 2);
    assert_eq!(app.rollover("b", "s1").await.status, 200);
    // c comes first in s1: bucket 1 now.
    for p in ["c", "a"] {
        let r = submit(&app, "b", p, "s1", 1).await;
        assert_eq!(r.body["season"], "s1", "{:?}", r.body);
    }
    let (of1, _) = buckets(&app, "b", "s1").await;
    assert_eq!(of1, BTreeMap::from([("a".into(), 1), ("c".into(), 1)]));
    let old = app.get("/v1/boards/b/players/c?season=all").await;
    assert_eq!(old.body["bucket"], 2, "{:?}", old.body);
    // keep_seasons 1: starting s2 drops season `all`, its buckets with it.
    assert_eq!(app.rollover("b", "s2").await.status, 200);
    submit(&app, "b", "a", "s2", 1).await;
    for key in ["lb:{b}:bk:all", "lb:{b}:bk:all:1", "lb:{b}:bk:all:2"] {
        assert!(!app.key_exists(key).await, "{key} outlived its season");
    }
    assert!(app.key_exists("lb:{b}:bk:s1:1").await);
}

/// The next `n` view updates (`rank`, `top`, `around`), by type, in whatever order they come;
/// panics if one type comes twice or they do not all come in time.
async fn updates(ws: &mut scorecast_tests::ws::WsClient, n: usize) -> BTreeMap<String, Value> {
    let mut seen = BTreeMap::new();
    while seen.len() < n {
        let v = ws.recv_until(EVENTUALLY, |_| true).await;
        let ty = v["type"].as_str().unwrap().to_owned();
        assert!(seen.insert(ty.clone(), v).is_none(), "{ty} came twice");
    }
    seen
}

/// The names of a view message's entries.
fn names(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["player"].as_str().unwrap().to_owned())
        .collect()
}

/// Live views over the WebSocket are within the player's bucket: `me`, `top` and `around` show
/// the bucket's players and ranks; a move in bucket 1 moves its watcher's views and its
/// watcher's alone (bucket 2's watcher hears nothing until its own bucket changes, and then
/// only of its own bucket); an operator's removal reaches the bucket's watchers too. A spectator's `top` of a bucketed board is `bad_request`, a player
/// without a bucket `not_found`.
#[tokio::test]
async fn live_views_are_within_the_bucket_and_other_buckets_hear_nothing() {
    use scorecast_tests::ws::{Incoming, WsClient};
    let app = app().await;
    app.board("b", bucketed(3)).await;
    for (p, pts) in [
        ("a1", 30),
        ("a2", 20),
        ("a3", 10),
        ("b1", 31),
        ("b2", 21),
        ("b3", 11),
    ] {
        assert_eq!(submit(&app, "b", p, "s", pts).await.status, 200);
    }
    let mut watchers = Vec::new();
    for p in ["a3", "b3"] {
        let mut ws = WsClient::connect(&app.ws_url()).await;
        assert_eq!(ws.hello(&app.token(p, None)).await["type"], "welcome");
        let me = ws.subscribe("b", "me", json!({})).await;
        assert_eq!(
            (me["rank"].clone(), me["board"].clone()),
            (json!(3), json!("b")),
            "{me}"
        );
        let top = ws.subscribe("b", "top", json!({"limit": 10})).await;
        assert_eq!(top["total"], 3, "{top}");
        let around = ws.subscribe("b", "around", json!({"radius": 1})).await;
        assert_eq!(names(&around).len(), 3, "{around}");
        watchers.push((ws, names(&top)));
    }
    let (mut wa, top_a) = watchers.remove(0);
    let (mut wb, top_b) = watchers.remove(0);
    assert_eq!(top_a, ["a1", "a2", "a3"]);
    assert_eq!(top_b, ["b1", "b2", "b3"]);

    // a3 climbs to the top of bucket 1 (35: above every player of both buckets).
    assert_eq!(submit(&app, "b", "a3", "up", 25).await.status, 200);
    let seen = updates(&mut wa, 3).await;
    assert_eq!(
        (seen["rank"]["rank"].clone(), seen["rank"]["score"].clone()),
        (json!(1), json!(35))
    );
    assert_eq!(seen["rank"]["previous_rank"], 3);
    assert_eq!(names(&seen["top"]), ["a3", "a1", "a2"]);
    assert_eq!(seen["top"]["total"], 3);
    assert_eq!(names(&seen["around"]), ["a3", "a1", "a2"]);
    // Bucket 2's watcher hears nothing of it: nothing within 10 of the hub's 50 ms windows.
    if let Some(Incoming::Json(v)) = wb.next_within(std::time::Duration::from_millis(500)).await {
        panic!("bucket 2's watcher was sent {v}");
    }
    // b2 passes b1 in bucket 2: b3's watcher sees its own bucket only, its rank unchanged at 3.
    assert_eq!(submit(&app, "b", "b2", "up", 15).await.status, 200);
    let seen = updates(&mut wb, 2).await;
    assert_eq!(names(&seen["top"]), ["b2", "b1", "b3"]);
    assert_eq!(names(&seen["around"]), ["b2", "b1", "b3"]);
    assert!(
        !seen.contains_key("rank"),
        "b3's rank did not change: {seen:?}"
    );
    // An operator removes a1 (second in bucket 1): its watcher's views follow.
    let r = app
        .call(Method::DELETE, "/admin/boards/b/players/a1", None, true)
        .await;
    assert_eq!(r.status, 204);
    let seen = updates(&mut wa, 2).await;
    let top = &seen["top"];
    assert_eq!(names(&seen["around"]), ["a3", "a2"]);
    assert_eq!(names(top), ["a3", "a2"]);
    assert_eq!(top["total"], 2);
    // Unsubscribing names the board: the views in the bucket's cell stop; `me` goes on.
    for view in ["top", "around"] {
        wa.send_json(json!({"type": "unsubscribe", "board": "b", "view": view}))
            .await;
    }
    // Unsubscribing has no answer: a ping's pong, answered in order after them, says the
    // session has done both before the score below is sent (over HTTP, not after them).
    wa.send_json(json!({"type": "ping"})).await;
    let pong = wa.next_json().await;
    assert_eq!(pong["type"], "pong", "{pong}");
    assert_eq!(submit(&app, "b", "a2", "up", 100).await.status, 200);
    let me = wa.recv_until(EVENTUALLY, |_| true).await;
    assert_eq!(
        (me["type"].clone(), me["rank"].clone()),
        (json!("rank"), json!(2)),
        "{me}"
    );
    if let Some(Incoming::Json(v)) = wa.next_within(std::time::Duration::from_millis(500)).await {
        panic!("an unsubscribed view was sent {v}");
    }

    let mut spectator = WsClient::connect(&app.ws_url()).await;
    let e = spectator.subscribe("b", "top", json!({})).await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("error"), Some("bad_request"))
    );
    let mut nobody = WsClient::connect(&app.ws_url()).await;
    nobody.hello(&app.token("nobody", None)).await;
    let e = nobody.subscribe("b", "me", json!({})).await;
    assert_eq!(
        (e["type"].as_str(), e["code"].as_str()),
        (Some("error"), Some("not_found"))
    );
}

/// The whole board of `board` as an operator reads it: (player, points, rank) rows.
async fn whole(app: &TestApp, board: &str) -> Vec<(String, i64, i64)> {
    let r = app
        .call(
            Method::GET,
            &format!("/admin/boards/{board}/top?limit=100"),
            None,
            true,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["player"].as_str().unwrap().to_owned(),
                e["score"].as_i64().unwrap(),
                e["rank"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn rows(r: &[(&str, i64)]) -> Vec<(String, i64, i64)> {
    r.iter()
        .zip(1..)
        .map(|(&(p, s), rank)| (p.to_owned(), s, rank))
        .collect()
}

/// A submission writes only its player's bucket: the season's own zset is not touched until an
/// operator reads the whole board, which merges it from the buckets; a later change is merged
/// at the next read, and moderation (a removal, a ban and its lift) shows in both the bucket
/// and the whole board.
#[tokio::test]
async fn the_whole_board_is_merged_from_the_buckets_when_read() {
    let app = app().await;
    app.board("b", bucketed(2)).await;
    for (p, pts) in [("a", 10), ("b", 40), ("c", 30), ("d", 20), ("e", 50)] {
        assert_eq!(submit(&app, "b", p, "s", pts).await.status, 200);
    }
    assert!(
        !app.key_exists("lb:{b}:s:all").await,
        "a submission wrote the whole board"
    );
    let all = rows(&[("e", 50), ("b", 40), ("c", 30), ("d", 20), ("a", 10)]);
    assert_eq!(whole(&app, "b").await, all);
    assert!(app.key_exists("lb:{b}:s:all").await);
    // Read again, unchanged; then a change is merged at the next read.
    assert_eq!(whole(&app, "b").await, all);
    assert_eq!(submit(&app, "b", "a", "s2", 45).await.body["rank"], 1);
    let all = rows(&[("a", 55), ("e", 50), ("b", 40), ("c", 30), ("d", 20)]);
    assert_eq!(whole(&app, "b").await, all);

    // A removal and a ban leave the bucket and the whole board; the lift brings the entry back
    // to both.
    let r = app
        .call(Method::DELETE, "/admin/boards/b/players/c", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let r = app
        .admin(Method::PUT, "/admin/bans/e", json!({"board": "b"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(submit(&app, "b", "d", "s2", 1).await.status, 200);
    let left = rows(&[("a", 55), ("b", 40), ("d", 21)]);
    assert_eq!(whole(&app, "b").await, left);
    let (_, zsets) = buckets(&app, "b", "all").await;
    let members: Vec<&String> = zsets.values().flatten().collect();
    assert!(!members.iter().any(|m| *m == "c" || *m == "e"), "{zsets:?}");
    let r = app
        .call(Method::DELETE, "/admin/bans/e?board=b", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let back = rows(&[("a", 55), ("e", 50), ("b", 40), ("d", 21)]);
    assert_eq!(whole(&app, "b").await, back);
    let e = app.get("/v1/boards/b/players/e").await;
    assert_eq!(
        (&e.body["score"], &e.body["bucket"]),
        (&json!(50), &json!(3))
    );
    // Unchanged since that read: the same again.
    assert_eq!(whole(&app, "b").await, back);
}

/// A board that becomes bucketed places its current season's scorers in buckets at once, in
/// rank order, so the whole board keeps them; one that stops being bucketed keeps the scores
/// made while it was (its whole board merged then).
#[tokio::test]
async fn gaining_or_losing_bucket_size_keeps_every_score() {
    let app = app().await;
    app.board("b", json!({"op": "incr", "submit_limit": null}))
        .await;
    for (p, pts) in [("a", 10), ("b", 40), ("c", 30)] {
        assert_eq!(submit(&app, "b", p, "s", pts).await.status, 200);
    }
    app.board("b", bucketed(2)).await;
    let (of, zsets) = buckets(&app, "b", "all").await;
    assert_eq!(
        of,
        BTreeMap::from([("a".into(), 2), ("b".into(), 1), ("c".into(), 1)])
    );
    assert_eq!(zsets[&2], ["a"]);
    // Scores made while bucketed: a new player and a placed one.
    assert_eq!(submit(&app, "b", "d", "s", 35).await.status, 200);
    let d = app.get("/v1/boards/b/players/d").await;
    assert_eq!((&d.body["bucket"], &d.body["rank"]), (&json!(2), &json!(1)));
    assert_eq!(submit(&app, "b", "a", "s2", 50).await.body["rank"], 1);
    let all = rows(&[("a", 60), ("b", 40), ("d", 35), ("c", 30)]);
    assert_eq!(whole(&app, "b").await, all);
    assert_eq!(submit(&app, "b", "c", "s2", 20).await.status, 200);
    app.board("b", json!({"op": "incr", "submit_limit": null}))
        .await;
    let all = rows(&[("a", 60), ("c", 50), ("b", 40), ("d", 35)]);
    assert_eq!(whole(&app, "b").await, all);
    let top = app.get("/v1/boards/b/top").await;
    assert_eq!(top.status, 200, "{:?}", top.body);
    assert_eq!(top.body["total"], 4);
    assert_eq!(top.body["entries"][1]["player"], "c");
}

/// The exact range holds on a bucketed board (its `incr` submissions move a score with ZINCRBY
/// unchecked only while a bound the season's buckets keep says it stays exact): the largest
/// exact total is accepted and one more is refused with nothing changed, also for a score the
/// board held before it became bucketed.
#[tokio::test]
async fn the_exact_range_holds_on_a_bucketed_board() {
    let app = app().await;
    let max = (1i64 << 53) - 1;
    app.board("b", bucketed(2)).await;
    assert_eq!(submit(&app, "b", "x", "1", max - 10).await.status, 200);
    assert_eq!(submit(&app, "b", "x", "2", 10).await.body["score"], max);
    let before = app.dump().await;
    let r = submit(&app, "b", "x", "3", 1).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "score_out_of_range"),
        "{:?}",
        r.body
    );
    assert_eq!(app.dump().await, before);

    // Scores that come into a bucket other than by a submission: placed when the board became
    // bucketed (y), or held by a ban then and given back when it is lifted (z).
    app.board("c", json!({"op": "incr", "submit_limit": null}))
        .await;
    assert_eq!(submit(&app, "c", "y", "1", max - 100).await.status, 200);
    assert_eq!(submit(&app, "c", "z", "1", -max).await.status, 200);
    let r = app
        .admin(Method::PUT, "/admin/bans/z", json!({"board": "c"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    app.board("c", bucketed(2)).await;
    let r = app
        .call(Method::DELETE, "/admin/bans/z?board=c", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let before = app.dump().await;
    for (p, pts) in [("y", 101), ("z", -1)] {
        let r = submit(&app, "c", p, "2", pts).await;
        assert_eq!(r.code(), "score_out_of_range", "{p}: {:?}", r.body);
    }
    assert_eq!(app.dump().await, before);
}
