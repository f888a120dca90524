//! The whole dedup rule of README "Redis keys", checked from outside `lua/submit.lua`: a retried
//! id is recognised while it is younger than 10 minutes and has at most 64 newer accepted
//! submissions of its player, whatever the count and the timing; a forgotten id counts again;
//! a silent player's records expire 20 minutes (not less) after their generation started.

use futures_util::future::join_all;
use scorecast_server::clock::Clock;
use scorecast_tests::*;
use serde_json::json;

/// The window and cap as README states them.
const WINDOW_MS: i64 = 600_000;
const CAP: usize = 64;
/// Real time a test may take between a write and its `PTTL` read on a loaded 2-core machine.
const TTL_MARGIN_MS: i64 = 30_000;

/// One accepted submission: its id, its place in the player's order (the `incr` score it
/// reached, since every submission adds 1) and the injected time it was applied at.
struct Sent {
    id: String,
    place: i64,
    at_ms: i64,
}

/// Submissions in chunks sent concurrently (so they go in group-committed batches of any size,
/// across generation boundaries) with the injected clock moving between chunks by steps that
/// cross the 10-minute window and the 64-record cap in every phase, then one by one. After
/// every chunk, every id younger than the window with at most 64 newer submissions is
/// retried: each answers its first result as a duplicate (the score does not move); the dedup
/// hash never holds more than 2 × 64 records. At the end an id with 128 newer submissions has
/// been forgotten and counts again.
#[tokio::test]
async fn every_id_within_the_rule_is_recognised_after_any_count_and_timing() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("d", json!({"op": "incr", "submit_limit": null}))
        .await;
    let mut c = app.redis_conn().await;
    // (chunk size, clock step before it, ms): bursts past the cap, steps just under and at the
    // window, and long quiet stretches.
    let mut plan = vec![
        (1, 0),
        (5, 1_000),
        (63, 0),
        (1, 599_999),
        (2, 1),
        (70, 0),
        (13, 300_000),
        (64, 299_999),
        (3, 1),
        (1, 599_999),
        (40, 0),
        (100, 120_000),
        (7, 600_000),
        (65, 0),
    ];
    // Then one at a time, so every count boundary is checked at its exact submission.
    plan.extend([(1, 0); 2 * CAP + 2]);
    let mut sent: Vec<Sent> = Vec::new();
    let mut n = 0;
    for (chunk, (size, step)) in plan.into_iter().enumerate() {
        clock.advance(step);
        let now = clock.now_ms();
        let subs: Vec<_> = (n..n + size)
            .map(|i| submission("d", "p", &format!("s{i}"), 1))
            .collect();
        n += size;
        for (s, r) in subs
            .iter()
            .zip(join_all(subs.iter().map(|s| app.state.submit(s))).await)
        {
            let r = r.unwrap();
            assert!(!r.duplicate, "{} is new", s.id);
            sent.push(Sent {
                id: s.id.to_string(),
                place: r.score,
                at_ms: now,
            });
        }
        let total = sent.len() as i64;
        let due: Vec<&Sent> = sent
            .iter()
            .filter(|s| total - s.place <= CAP as i64 && now - s.at_ms < WINDOW_MS)
            .collect();
        let retries: Vec<_> = due.iter().map(|s| submission("d", "p", &s.id, 1)).collect();
        for (s, r) in due
            .iter()
            .zip(join_all(retries.iter().map(|r| app.state.submit(r))).await)
        {
            let r = r.unwrap();
            assert!(
                r.duplicate && r.score == s.place,
                "chunk {chunk}: {} ({} newer, {} ms old) not recognised: {r:?}",
                s.id,
                total - s.place,
                now - s.at_ms
            );
        }
        let fields: usize = redis::cmd("HLEN")
            .arg("lb:{d}:dd:p")
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(
            fields <= 2 * CAP + 2,
            "chunk {chunk}: {fields} fields in the dedup hash"
        );
    }
    let total = sent.len() as i64;
    let old = sent
        .iter()
        .find(|s| total - s.place >= 2 * CAP as i64)
        .unwrap();
    let again = app
        .state
        .submit(&submission("d", "p", &old.id, 1))
        .await
        .unwrap();
    assert!(
        !again.duplicate && again.score == total + 1,
        "{} ({} newer) counts again: {again:?}",
        old.id,
        total - old.place
    );
}

/// The count boundary exactly: the last id of a full generation is recognised with 64 newer
/// submissions, and once a 65th newer one starts a third generation it is forgotten and a
/// retry of it counts again.
#[tokio::test]
async fn an_id_with_64_newer_is_recognised_and_with_65_counts_again() {
    let app = spawn_app_with(|_| {}, Clock::manual(1_700_000_000_000)).await;
    app.board("d", json!({"op": "incr", "submit_limit": null}))
        .await;
    let submit = |sid: String| {
        let s = submission("d", "p", &sid, 1);
        let state = app.state.clone();
        async move { state.submit(&s).await.unwrap() }
    };
    for i in 0..CAP - 1 {
        submit(format!("f{i}")).await;
    }
    let x = submit("x".into()).await; // the 64th: the last of the first generation
    assert_eq!(x.score, CAP as i64);
    for i in 0..CAP {
        submit(format!("n{i}")).await;
    }
    let r = submit("x".into()).await;
    assert!(r.duplicate && r.score == x.score, "64 newer: {r:?}");
    submit("n64".into()).await;
    let r = submit("x".into()).await;
    assert!(
        !r.duplicate && r.score == 2 * CAP as i64 + 2,
        "65 newer: forgotten, counted again: {r:?}"
    );
}

/// The time boundary across a generation changed by time: the first id of a generation is
/// recognised 1 ms before its 10 minutes, and so is its last one although a later submission
/// started a new generation in between (the previous one had become 10 minutes old).
#[tokio::test]
async fn an_id_is_recognised_for_10_minutes_across_generations_changed_by_time() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("d", json!({"op": "incr", "submit_limit": null}))
        .await;
    let submit = |sid: &str| {
        let s = submission("d", "p", sid, 1);
        let state = app.state.clone();
        async move { state.submit(&s).await.unwrap() }
    };
    let a = submit("a").await; // t0: a generation starts
    clock.advance(WINDOW_MS - 1_000);
    let b = submit("b").await; // t0 + 9:59, the end of that generation
    clock.advance(999);
    let r = submit("a").await;
    assert!(r.duplicate && r.score == a.score, "a at 9:59.999: {r:?}");
    clock.advance(1);
    submit("c").await; // t0 + 10:00: a new generation, by time
    clock.advance(WINDOW_MS - 2_000);
    submit("d").await; // t0 + 19:58: no new generation yet (c's is 9:58 old)
    clock.advance(999);
    let r = submit("b").await;
    assert!(
        r.duplicate && r.score == b.score,
        "b at 9:59.999, after a new generation: {r:?}"
    );
}

/// A silent player's records: the hash expires 20 minutes after its generation started — not
/// sooner (a record written at the end of a generation must still live 10 minutes) and not
/// later —, and a new generation re-arms it. Redis's own clock runs the expiry, so the test
/// reads `PTTL` (with [`TTL_MARGIN_MS`] for a slow machine) instead of waiting.
#[tokio::test]
async fn a_silent_players_records_expire_20_minutes_after_their_generation_started() {
    let clock = Clock::manual(1_700_000_000_000);
    let app = spawn_app_with(|_| {}, clock.clone()).await;
    app.board("d", json!({"op": "incr", "submit_limit": null}))
        .await;
    let mut c = app.redis_conn().await;
    let key = "lb:{d}:dd:p";
    let pttl = |c: &mut redis::aio::MultiplexedConnection| {
        let mut c = c.clone();
        async move {
            redis::cmd("PTTL")
                .arg(key)
                .query_async::<i64>(&mut c)
                .await
                .unwrap()
        }
    };
    app.state
        .submit(&submission("d", "p", "s0", 1))
        .await
        .unwrap();
    let ttl = pttl(&mut c).await;
    assert!(
        (2 * WINDOW_MS - TTL_MARGIN_MS..=2 * WINDOW_MS).contains(&ttl),
        "a new hash expires in 20 minutes: PTTL {ttl}"
    );
    // As if Redis had counted 19 minutes of the player's silence: the next submission, 10
    // minutes later on the script's clock, starts a new generation and re-arms the expiry.
    let _: () = redis::cmd("PEXPIRE")
        .arg(key)
        .arg(60_000)
        .query_async(&mut c)
        .await
        .unwrap();
    clock.advance(WINDOW_MS);
    app.state
        .submit(&submission("d", "p", "s1", 1))
        .await
        .unwrap();
    let ttl = pttl(&mut c).await;
    assert!(
        (2 * WINDOW_MS - TTL_MARGIN_MS..=2 * WINDOW_MS).contains(&ttl),
        "a new generation re-arms 20 minutes: PTTL {ttl}"
    );
}
