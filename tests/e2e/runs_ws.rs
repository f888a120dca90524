//! Runs and verified submissions over the WebSocket (`start_run`, `proof`): the same code path
//! as `POST /v1/boards/{b}/runs` and `.../proof`, answered as the protocol says, every refusal
//! with its code and nothing changed in Redis; an expired run takes no more proofs and frees
//! its place among the player's open runs.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use scorecast_server::clock::Clock;
use scorecast_tests::ws::WsClient;
use scorecast_tests::{spawn_app_with, TestApp};
use serde_json::{json, Value};

use crate::validators::play_2048;

const T0: i64 = 1_800_000_000_000;
const BOARD: &str = "game-2048";

async fn app(tweak: impl FnOnce(&mut scorecast_server::config::Settings)) -> TestApp {
    let app = spawn_app_with(tweak, Clock::manual(T0)).await;
    app.board(BOARD, json!({"op": "best", "validator": "2048"}))
        .await;
    app.board("plain", json!({})).await;
    app
}

async fn player(app: &TestApp, name: &str) -> WsClient {
    let mut ws = WsClient::connect(&app.ws_url()).await;
    assert_eq!(ws.hello(&app.token(name, None)).await["type"], "welcome");
    ws
}

/// Sends `start_run` and returns its answer (`run` or `rejected` carrying `id`).
async fn start_run(ws: &mut WsClient, id: &str, board: &str) -> Value {
    ws.send_json(json!({"type": "start_run", "id": id, "board": board}))
        .await;
    ws.recv_until(scorecast_tests::ws::WAIT, |v| {
        (v["type"] == "run" || v["type"] == "rejected") && v["id"] == id
    })
    .await
}

/// Sends `proof` (the bytes as standard base64) and returns its answer (`ack` or `rejected`).
async fn proof(ws: &mut WsClient, id: &str, board: &str, run: &str, bytes: &[u8]) -> Value {
    proof_text(ws, id, board, run, &STANDARD.encode(bytes)).await
}

async fn proof_text(ws: &mut WsClient, id: &str, board: &str, run: &str, b64: &str) -> Value {
    ws.send_json(json!({"type": "proof", "id": id, "board": board, "run": run, "proof": b64}))
        .await;
    ws.answer_to(id).await
}

/// `(type, code)` of an answer, for one-line assertions.
fn outcome(v: &Value) -> (&str, &str) {
    (
        v["type"].as_str().unwrap_or(""),
        v["code"].as_str().unwrap_or(""),
    )
}

/// `start_run` answers `run` with the HTTP answer's fields (kept in Redis as the HTTP route
/// keeps it); `proof` is answered as a `submit` is, with the score the 2048 validator replays
/// from the run's seed: a longer proof raises the best, a proof sent again (over the socket
/// with a new or the same id, or over HTTP) is a duplicate, spectators of the board see the
/// score pushed live, and the board's log has each checkpoint once.
#[tokio::test]
async fn ws_runs_record_the_validators_score() {
    let app = app(|_| {}).await;
    let mut alice = player(&app, "alice").await;
    let mut watcher = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        watcher.subscribe(BOARD, "top", json!({})).await["type"],
        "top"
    );

    let run = start_run(&mut alice, "r-1", BOARD).await;
    assert_eq!(
        (&run["type"], &run["id"], &run["board"]),
        (&json!("run"), &json!("r-1"), &json!(BOARD)),
        "{run}"
    );
    assert_eq!(
        (run["started_ms"].as_i64(), run["expires_ms"].as_i64()),
        (Some(T0), Some(T0 + 3_600_000)),
        "{run}"
    );
    let (id, seed) = (
        run["run"].as_str().unwrap().to_owned(),
        run["seed"].as_u64().unwrap() as u32,
    );
    let kept = app.stored_run(BOARD, &id).await;
    assert_eq!(
        (&kept["player"], &kept["seed"]),
        (&json!("alice"), &run["seed"])
    );

    // A minute of play: 200 moves are within 25 a second.
    app.clock.advance(60_000);
    let (p20, s20) = play_2048(seed, 20);
    let a = proof(&mut alice, "p-1", BOARD, &id, &p20).await;
    assert_eq!(
        (&a["type"], &a["score"], &a["rank"], &a["duplicate"]),
        (&json!("ack"), &json!(s20), &json!(1), &json!(false)),
        "{a}"
    );
    let (p200, s200) = play_2048(seed, 200);
    assert!(s200 > s20);
    let a = proof(&mut alice, "p-2", BOARD, &id, &p200).await;
    assert_eq!(
        (&a["type"], &a["score"], &a["duplicate"], &a["board"]),
        (&json!("ack"), &json!(s200), &json!(false), &json!(BOARD)),
        "{a}"
    );
    watcher
        .recv_until(scorecast_tests::ws::WAIT, |v| {
            v["type"] == "top" && scorecast_tests::score_of(v, "alice") == Some(s200)
        })
        .await;

    let stored = app.dump().await;
    for again in ["p-2", "p-3"] {
        let a = proof(&mut alice, again, BOARD, &id, &p200).await;
        assert_eq!(
            (&a["type"], &a["score"], &a["duplicate"]),
            (&json!("ack"), &json!(s200), &json!(true)),
            "{again}: {a}"
        );
    }
    let res = app
        .http
        .post(app.url(&format!("/v1/boards/{BOARD}/runs/{id}/proof")))
        .bearer_auth(app.token("alice", None))
        .body(p200.clone())
        .send()
        .await
        .unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["duplicate"], true, "the same proof over HTTP: {body}");
    assert_eq!(app.dump().await, stored, "a duplicate proof changed Redis");
    assert_eq!(
        app.get(&format!("/v1/boards/{BOARD}/players/alice"))
            .await
            .body["score"],
        s200
    );
    // The board's log holds each checkpoint once, under the server's submission id.
    let log = app
        .call(
            reqwest::Method::GET,
            &format!("/admin/boards/{BOARD}/log?player=alice&limit=10"),
            None,
            true,
        )
        .await;
    let mut ids: Vec<&str> = log.body["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("{:?}", log.body))
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want = [
        format!("{id}.{}", p20.len()),
        format!("{id}.{}", p200.len()),
    ];
    want.sort();
    assert_eq!(ids, want, "{:?}", log.body);
}

/// Every refusal of `start_run` and `proof` over the WebSocket is answered `rejected` with the
/// request's id and its code, and changes nothing in Redis (dumped before and after each):
/// no hello, no validator, unknown board, too many open runs, another player's run, an unknown
/// run, bad base64, an oversize proof, a forged proof, one faster than the run's time allows,
/// and plain points to the verified board. A proof of the largest size the sandbox takes gets
/// through the socket's message limit to the validator.
#[tokio::test]
async fn ws_run_refusals_have_their_code_and_change_nothing() {
    let app = app(|s| s.validators.max_open_runs = 2).await;
    let proof_bytes = app.state.settings.validators.proof_bytes;
    let mut alice = player(&app, "alice").await;
    let mut bob = player(&app, "bob").await;
    let mut spectator = WsClient::connect(&app.ws_url()).await;
    let mine = start_run(&mut alice, "r-1", BOARD).await;
    assert_eq!(mine["type"], "run", "{mine}");
    assert_eq!(start_run(&mut alice, "r-2", BOARD).await["type"], "run");
    let theirs = start_run(&mut bob, "r-3", BOARD).await;
    let (mine, theirs) = (
        mine["run"].as_str().unwrap().to_owned(),
        theirs["run"].as_str().unwrap().to_owned(),
    );

    let before = app.dump().await;
    let check = |what: &'static str, answer: Value, code: &str, says: &str| {
        assert_eq!(outcome(&answer), ("rejected", code), "{what}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(says),
            "{what}: {answer}"
        );
        what
    };
    let mut checked = Vec::new();

    let a = start_run(&mut spectator, "s-1", BOARD).await;
    checked.push(check("start_run without hello", a, "unauthorized", "hello"));
    let a = proof(&mut spectator, "s-2", BOARD, &mine, b"d").await;
    checked.push(check("proof without hello", a, "unauthorized", "hello"));
    let a = start_run(&mut alice, "r-4", "plain").await;
    checked.push(check(
        "start_run, no validator",
        a,
        "bad_request",
        "no validator",
    ));
    let a = start_run(&mut alice, "r-5", "nope").await;
    checked.push(check(
        "start_run, unknown board",
        a,
        "unknown_board",
        "nope",
    ));
    let a = start_run(&mut alice, "r-6", BOARD).await;
    checked.push(check(
        "start_run past max_open_runs",
        a,
        "conflict",
        "2 open runs",
    ));
    let a = proof(&mut alice, "p-1", BOARD, &theirs, b"d").await;
    checked.push(check(
        "another player's run",
        a,
        "forbidden",
        "another player",
    ));
    let a = proof(&mut alice, "p-2", BOARD, "nope", b"d").await;
    checked.push(check("unknown run", a, "not_found", "no run"));
    let a = proof(&mut alice, "p-3", "plain", &mine, b"d").await;
    checked.push(check(
        "proof to a board without validator",
        a,
        "bad_request",
        "no validator",
    ));
    let a = proof_text(&mut alice, "p-4", BOARD, &mine, "d*==").await;
    checked.push(check("bad base64", a, "bad_request", "base64"));
    let a = proof(
        &mut alice,
        "p-5",
        BOARD,
        &mine,
        &vec![b'u'; proof_bytes + 1],
    )
    .await;
    checked.push(check("oversize proof", a, "payload_too_large", "at most"));
    // The largest proof the sandbox takes reaches the validator (which refuses these moves).
    let a = proof(&mut alice, "p-6", BOARD, &mine, &vec![b'u'; proof_bytes]).await;
    checked.push(check("largest proof", a, "bad_request", "proof_refused"));
    let a = proof(&mut alice, "p-7", BOARD, &mine, b"dlrx").await;
    checked.push(check("forged proof", a, "bad_request", "proof_refused"));
    // No time has passed since the run started: 200 moves at once is faster than 25 a second.
    let run_seed = {
        let mut c = app.redis_conn().await;
        let kept: String = redis::cmd("GET")
            .arg(format!("lb:{{{BOARD}}}:run:{mine}"))
            .query_async(&mut c)
            .await
            .unwrap();
        serde_json::from_str::<Value>(&kept).unwrap()["seed"]
            .as_u64()
            .unwrap() as u32
    };
    let a = proof(&mut alice, "p-8", BOARD, &mine, &play_2048(run_seed, 200).0).await;
    checked.push(check("too fast", a, "bad_request", "reason -3"));
    let a = alice.submit("p-9", BOARD, 1_000_000).await;
    checked.push(check(
        "plain points to a verified board",
        a,
        "forbidden",
        "verified",
    ));
    assert_eq!(app.dump().await, before, "a refusal changed Redis");

    // The sessions are still open and served.
    for ws in [&mut alice, &mut spectator] {
        ws.send_json(json!({"type": "ping"})).await;
        assert_eq!(ws.recv_type("pong").await["type"], "pong");
    }
    assert_eq!(checked.len(), 14);
}

/// A run lasts `run_ttl_ms` on the server's clock (injected here): once past `expires_ms` a
/// proof to it is `not_found` and changes nothing, and it no longer counts against
/// `max_open_runs`, so the player may start another; a run stays open after its proofs
/// (checkpoints), so proofs alone never free its place. A `start_run` sent again with its id
/// answers the same run, even at the limit, and changes nothing.
#[tokio::test]
async fn an_expired_run_takes_no_proofs_and_frees_its_place() {
    let app = app(|s| {
        s.validators.max_open_runs = 1;
        s.validators.run_ttl_ms = 60_000;
    })
    .await;
    let mut alice = player(&app, "alice").await;
    let run = start_run(&mut alice, "r-1", BOARD).await;
    let (id, seed) = (
        run["run"].as_str().unwrap().to_owned(),
        run["seed"].as_u64().unwrap() as u32,
    );
    assert_eq!(run["expires_ms"].as_i64(), Some(T0 + 60_000), "{run}");
    // The same request again (an answer lost to a disconnect): the same run, even at the
    // open-run limit, and nothing changes; a new request is refused by the limit.
    let before = app.dump().await;
    app.clock.advance(1_000);
    assert_eq!(start_run(&mut alice, "r-1", BOARD).await, run);
    assert_eq!(
        app.dump().await,
        before,
        "a start_run sent again changed Redis"
    );
    let a = start_run(&mut alice, "r-1b", BOARD).await;
    assert_eq!(outcome(&a), ("rejected", "conflict"), "{a}");
    let mut bob = player(&app, "bob").await;
    let bobs = start_run(&mut bob, "r-1", BOARD).await;
    assert_eq!(bobs["type"], "run", "{bobs}");
    assert_ne!(
        bobs["run"], run["run"],
        "another player's request of the same id"
    );

    app.clock.advance(29_000);
    let (p, s) = play_2048(seed, 20);
    let a = proof(&mut alice, "p-1", BOARD, &id, &p).await;
    assert_eq!((&a["type"], &a["score"]), (&json!("ack"), &json!(s)), "{a}");
    let a = start_run(&mut alice, "r-2", BOARD).await;
    assert_eq!(
        outcome(&a),
        ("rejected", "conflict"),
        "open after a proof: {a}"
    );

    // One millisecond before the end the run still takes proofs; at the end it is gone.
    app.clock.advance(29_999);
    let (p40, s40) = play_2048(seed, 40);
    let a = proof(&mut alice, "p-2", BOARD, &id, &p40).await;
    assert_eq!(
        (&a["type"], &a["score"]),
        (&json!("ack"), &json!(s40)),
        "{a}"
    );
    app.clock.advance(1);
    let before = app.dump().await;
    let (p60, _) = play_2048(seed, 60);
    let a = proof(&mut alice, "p-3", BOARD, &id, &p60).await;
    assert_eq!(outcome(&a), ("rejected", "not_found"), "{a}");
    assert!(a["message"].as_str().unwrap().contains("expired"), "{a}");
    assert_eq!(
        app.dump().await,
        before,
        "a proof to an expired run changed Redis"
    );

    // Its id is not a new run: `conflict`, for an hour past its end (the record's lifetime in
    // Redis, which expires it on its own clock), and nothing changes.
    let a = start_run(&mut alice, "r-1", BOARD).await;
    assert_eq!(outcome(&a), ("rejected", "conflict"), "{a}");
    assert!(a["message"].as_str().unwrap().contains("expired"), "{a}");
    assert_eq!(
        app.dump().await,
        before,
        "an expired run's id changed Redis"
    );
    let mut c = app.redis_conn().await;
    let kept: i64 = redis::cmd("PTTL")
        .arg(format!("lb:{{{BOARD}}}:run:{id}"))
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        kept > 60_000 + 3_600_000 - 30_000,
        "the record expires in {kept} ms"
    );

    let next = start_run(&mut alice, "r-3", BOARD).await;
    assert_eq!(next["type"], "run", "the expired run still counts: {next}");
    assert_ne!(next["run"], run["run"]);
    let open: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("lb:{{{BOARD}}}:runs:alice"))
        .arg(0)
        .arg(-1)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(
        open,
        vec![next["run"].as_str().unwrap().to_owned()],
        "expired runs are dropped"
    );
}

/// The socket reads messages as large as the largest proof needs, but only a `proof` may be
/// above `max_frame_bytes` (16 KiB): a larger `submit`, or a larger binary frame, is still
/// closed with 1009.
#[tokio::test]
async fn only_a_proof_may_be_above_the_frame_limit() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let app = app(|_| {}).await;
    let pad = "x".repeat(20 * 1024);
    let mut c = player(&app, "alice").await;
    c.send_json(json!({"type": "submit", "id": "s-1", "board": "plain", "points": 1, "pad": pad}))
        .await;
    assert_eq!(c.expect_close(scorecast_tests::ws::WAIT).await, Some(1009));

    let mut c = player(&app, "alice").await;
    c.ws.send(Message::binary(vec![0u8; 20 * 1024]))
        .await
        .unwrap();
    assert_eq!(c.expect_close(scorecast_tests::ws::WAIT).await, Some(1009));

    // The same padding on a proof is read (and the proof answered).
    let mut c = player(&app, "alice").await;
    c.send_json(json!({"type": "proof", "id": "p-1", "board": BOARD, "run": "nope", "proof": "", "pad": pad}))
        .await;
    assert_eq!(
        outcome(&c.answer_to("p-1").await),
        ("rejected", "not_found")
    );

    // Past a proof's own limit even a proof is closed with 1009, and the reason names that
    // limit (88 408 bytes: the base64 of 64 KiB and 1 KiB for the rest), not only 16 KiB.
    let mut c = player(&app, "alice").await;
    let pad = "x".repeat(88_408);
    c.send_json(json!({"type": "proof", "id": "p-2", "board": BOARD, "run": "nope", "proof": "", "pad": pad}))
        .await;
    let close = loop {
        match tokio::time::timeout(
            scorecast_tests::ws::WAIT,
            futures_util::StreamExt::next(&mut c.ws),
        )
        .await
        .expect("closed within the wait")
        {
            Some(Ok(Message::Close(f))) => break f.expect("a close frame with its reason"),
            Some(Ok(_)) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    assert_eq!(
        (u16::from(close.code), close.reason.as_str()),
        (
            1009,
            "messages above 16384 bytes are refused (88408 for a proof)"
        )
    );
}

/// Past the connection's message rate, `start_run` and `proof` are `rejected` `rate_limited`
/// with their own id and `retry_after_ms` (as a `submit` is), and change nothing.
#[tokio::test]
async fn runs_and_proofs_over_the_message_rate_are_rejected_with_their_id() {
    // 2 a second: a burst of 4 messages, then one more every 500 ms (the frames below are
    // written back to back, in far less), and a budget of 2 refusals before a close.
    let app = app(|s| s.ws.max_messages_per_sec = 2).await;
    let mut c = WsClient::connect(&app.ws_url()).await;
    let before = app.dump().await;
    for _ in 0..4 {
        c.send_json(json!({"type": "ping"})).await;
    }
    c.send_json(json!({"type": "start_run", "id": "r-over", "board": BOARD}))
        .await;
    c.send_json(json!({"type": "proof", "id": "p-over", "board": BOARD, "run": "x", "proof": ""}))
        .await;
    for _ in 0..4 {
        assert_eq!(c.next_json().await["type"], "pong");
    }
    for id in ["r-over", "p-over"] {
        let r = c.next_json().await;
        assert_eq!(
            (&r["type"], &r["id"], &r["code"]),
            (&json!("rejected"), &json!(id), &json!("rate_limited")),
            "{r}"
        );
        assert!(r["retry_after_ms"].as_u64().is_some(), "{r}");
    }
    assert_eq!(
        app.dump().await,
        before,
        "a refused run or proof changed Redis"
    );
}
