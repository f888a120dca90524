//! `previous_rank` in `rank` pushes (docs/protocol.md, "Views"): the rank before the last change
//! the view saw, for a player who moved — through the update that goes with the ack and
//! through the board's flush derived from the change events — and for a player pushed down by
//! others.

use scorecast_server::clock::Clock;
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::*;
use serde_json::{json, Value};

/// bob 100, carol 90, alice 50: alice is 3rd.
async fn three_players(app: &TestApp, board: &str) {
    app.board(board, json!({"op": "incr"})).await;
    app.score(board, "bob", 100).await;
    app.score(board, "carol", 90).await;
    app.score(board, "alice", 50).await;
}

/// (score, rank, previous_rank) of a `rank` push.
fn standing(v: &Value) -> (Value, Value, Value) {
    (
        v["score"].clone(),
        v["rank"].clone(),
        v["previous_rank"].clone(),
    )
}

/// The update that goes with the ack: with a flush window far longer than the test, alice's
/// climb from 3rd to 1st reaches her `me` view only with her ack, and says `previous_rank` 3
/// like the ack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_movers_update_with_its_ack_has_the_rank_before_it() {
    let app = spawn_app_with(|s| s.ws.coalesce_ms = 600_000, Clock::Redis).await;
    let board = "pa";
    three_players(&app, board).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token("alice", None)).await["type"], "welcome");
    let snap = ws.subscribe(board, "me", json!({})).await;
    assert_eq!(snap["rank"], 3, "{snap}");
    assert_eq!(ws.subscribe(board, "top", json!({})).await["type"], "top");
    // A change below alice and its (first, immediate) flush: the hub knows the board now.
    app.score(board, "zed", 1).await;
    ws.recv_until(WAIT, |v| v["type"] == "top" && v["total"] == 4)
        .await;

    let with_ack = app.state.hub.view_counts(&id(board)).with_ack;
    ws.send_json(json!({"type": "submit", "id": "s1", "board": board, "points": 100}))
        .await;
    let (mut ack, mut rank) = (None, None);
    while ack.is_none() || rank.is_none() {
        match ws.next_within(WAIT).await {
            Some(Incoming::Json(v)) if v["type"] == "ack" => ack = Some(v),
            Some(Incoming::Json(v)) if v["type"] == "rank" => rank = Some(v),
            Some(Incoming::Json(v)) if v["type"] == "top" => {}
            other => panic!("expected the ack and the `rank` update, got {other:?}"),
        }
    }
    let (ack, rank) = (ack.unwrap(), rank.unwrap());
    assert_eq!(standing(&ack), (json!(150), json!(1), json!(3)), "{ack}");
    assert_eq!(standing(&rank), (json!(150), json!(1), json!(3)), "{rank}");
    assert_eq!(
        app.state.hub.view_counts(&id(board)).with_ack,
        with_ack + 1,
        "the update went with the ack (this server's count for the board)"
    );
}

/// The board's flush, derived from the change events (this server's count for the board says
/// derived, not read): alice climbs from 3rd to 1st by an admin's submission through another
/// instance, and her view says `previous_rank` 3; then dave passes her and her view says rank
/// 2, `previous_rank` 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushed_updates_have_the_rank_before_the_change_for_movers_and_the_pushed_down() {
    let app = spawn_app().await;
    let board = "pf";
    three_players(&app, board).await;
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token("alice", None)).await["type"], "welcome");
    let snap = ws.subscribe(board, "me", json!({})).await;
    assert_eq!(standing(&snap).1, json!(3), "{snap}");
    assert_eq!(ws.subscribe(board, "top", json!({})).await["type"], "top");
    // A change below alice and its flush: the hub knows the board's ranking and season now,
    // so later standings are derived from the events.
    app.score(board, "zed", 1).await;
    ws.recv_until(WAIT, |v| v["type"] == "top" && v["total"] == 4)
        .await;
    let counts = || app.state.hub.view_counts(&id(board));
    let before = counts();
    // Through another instance: this one learns of it only from the change event (a
    // submission through this instance would send alice's update at commit, with_ack).
    let other = app.second_instance().await;
    let score_there = |player: &'static str, points: i64| {
        let req = app
            .http
            .post(other.url(&format!("/admin/boards/{board}/players/{player}/score")))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({ "points": points }));
        async move { assert_eq!(req.send().await.unwrap().status(), 200) }
    };

    score_there("alice", 100).await;
    let moved = ws
        .recv_until(WAIT, |v| v["type"] == "rank" && v["score"] == 150)
        .await;
    assert_eq!(
        standing(&moved),
        (json!(150), json!(1), json!(3)),
        "{moved}"
    );
    let after = counts();
    assert!(
        after.me_derived > before.me_derived && after.me_read == before.me_read,
        "alice's standing was read, not derived: {before:?} -> {after:?}"
    );

    score_there("dave", 1000).await;
    let pushed = ws
        .recv_until(WAIT, |v| v["type"] == "rank" && v["rank"] != 1)
        .await;
    assert_eq!(
        standing(&pushed),
        (json!(150), json!(2), json!(1)),
        "{pushed}"
    );
}
