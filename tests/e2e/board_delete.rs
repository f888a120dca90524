//! Deleting a board (docs/protocol.md, "Moderation"): with thousands of keys — more than one
//! step of the script's walk over the keyspace — no key of it remains and other boards are
//! intact; a view open on it keeps its last state and gets no more pushes; a new subscribe is
//! answered `unknown_board`.

use futures_util::future::join_all;
use scorecast_tests::ws::WsClient;
use scorecast_tests::*;
use serde_json::{json, Value};

const PLAYERS: usize = 2_000;

async fn keys(app: &TestApp, pattern: &str) -> Vec<String> {
    let mut c = app.redis_conn().await;
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut c)
        .await
        .unwrap()
}

/// 2 000 players on board `big` (each with a score, a dedup record and limiter state: over
/// 4 000 keys, so `lua/board_delete.lua` scans in several steps) and a watching `top` view;
/// deleting it leaves no `lb:{big}:` key, board `small` dumps the same, the open view gets no
/// push (a ping is answered before anything else, also after a refused submission to the
/// deleted board), and a new subscribe is `unknown_board`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_board_with_thousands_of_players_leaves_no_key_and_ends_its_views() {
    let app = spawn_app().await;
    app.board("big", json!({"op": "incr"})).await;
    app.board("small", json!({})).await;
    app.score("small", "keeper", 7).await;
    let subs: Vec<_> = (0..PLAYERS)
        .map(|p| submission("big", &format!("p{p}"), "s1", p as i64 + 1))
        .collect();
    for chunk in subs.chunks(250) {
        for r in join_all(chunk.iter().map(|s| app.state.submit(s))).await {
            r.unwrap();
        }
    }
    let before = keys(&app, "lb:{big}:*").await.len();
    assert!(before > 2 * PLAYERS, "only {before} keys of the board");
    let small: Vec<_> = app
        .dump()
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with("lb:{small}:"))
        .collect();

    let mut watcher = WsClient::connect(&app.ws_url()).await;
    let snap = watcher.subscribe("big", "top", json!({"limit": 3})).await;
    assert_eq!(snap["total"], PLAYERS, "{snap}");

    let r = app.delete_board("big").await;
    assert!(r.status.is_success(), "{:?}", r.body);
    assert_eq!(keys(&app, "lb:{big}:*").await, Vec::<String>::new());
    let small_after: Vec<_> = app
        .dump()
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with("lb:{small}:"))
        .collect();
    assert_eq!(small_after, small, "the other board is intact");

    let pong_first = |v: Value| assert_eq!(v["type"], "pong", "no push after the delete: {v}");
    watcher.send_json(json!({"type": "ping"})).await;
    pong_first(watcher.next_json().await);
    let e = app
        .state
        .submit(&submission("big", "p1", "s2", 1))
        .await
        .unwrap_err();
    assert_eq!(e.code.as_str(), "unknown_board");
    app.score("small", "keeper", 1).await;
    watcher.send_json(json!({"type": "ping"})).await;
    pong_first(watcher.next_json().await);
    let again = watcher.subscribe("big", "top", json!({})).await;
    assert_eq!(
        (&again["type"], &again["code"]),
        (&json!("error"), &json!("unknown_board")),
        "{again}"
    );
}
