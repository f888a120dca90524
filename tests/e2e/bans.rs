//! Bans across seasons and time (docs/protocol.md, "Moderation"): a ban hides the player in
//! every kept season, past seasons' reads included; its lift by the job is due at `until_ms`
//! and not a millisecond before, restores only the seasons the board still keeps, and is
//! audited as `expired`.

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::jobs;
use scorecast_tests::*;
use serde_json::json;

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;
const UNTIL: i64 = T0 + 60_000;

/// (player, score) of a season's top, or the status when it is not 200.
async fn top(app: &TestApp, season: &str) -> Result<Vec<(String, i64)>, u16> {
    let r = app
        .get(&format!("/v1/boards/b/top?limit=10&season={season}"))
        .await;
    if r.status != 200 {
        return Err(r.status.as_u16());
    }
    Ok(players(&r.body))
}

/// Runs every job due now (the rollovers' own jobs too); their (kind, succeeded).
async fn run_due(app: &TestApp) -> Vec<(String, bool)> {
    let mut ran = Vec::new();
    while let Some((job, ok)) = jobs::run_next(&app.state, &NoNotify).await.unwrap() {
        ran.push((job.kind, ok));
        assert!(ran.len() < 100, "jobs keep coming: {ran:?}");
    }
    ran
}

fn rows(v: &[(&str, i64)]) -> Result<Vec<(String, i64)>, u16> {
    Ok(v.iter().map(|(p, s)| (p.to_string(), *s)).collect())
}

async fn rollover(app: &TestApp, season: &str) {
    let r = app.rollover("b", season).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// Seasons `all`, `s2`, `s3` (current) with `keep_seasons: 2`; `ann` is banned until `UNTIL`:
/// she is gone from the current season and from both past seasons' reads (`?season=`), her
/// player read of a past season is 404. Season `s4` starts (dropping `all`). The `ban.lift`
/// job is not due at `UNTIL - 1`; at `UNTIL` it puts her back in `s2` and `s3` only (`all`
/// stays gone, no key of it comes back), and the audit log's newest entry for her is an
/// `unban` with reason `expired`.
#[tokio::test]
async fn a_ban_spans_every_kept_season_and_its_lift_restores_only_those_still_kept() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("b", json!({"keep_seasons": 2})).await;
    for (season, base) in [("all", 10), ("s2", 20), ("s3", 30)] {
        if season != "all" {
            rollover(&app, season).await;
        }
        app.score("b", "ann", base).await;
        app.score("b", "bob", base - 5).await;
    }
    let r = app
        .admin(
            Method::PUT,
            "/admin/bans/ann",
            json!({"board": "b", "until_ms": UNTIL}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    for (season, bob) in [("s3", 25), ("s2", 15), ("all", 5)] {
        assert_eq!(
            top(&app, season).await,
            rows(&[("bob", bob)]),
            "season {season} while banned"
        );
    }
    let past = app.get("/v1/boards/b/players/ann?season=s2").await;
    assert_eq!(
        past.status, 404,
        "a past season's player read: {:?}",
        past.body
    );

    rollover(&app, "s4").await;
    app.score("b", "bob", 45).await;
    assert_eq!(top(&app, "all").await, Err(404), "`all` is no longer kept");

    app.clock.set(UNTIL - 1);
    let early = run_due(&app).await;
    assert!(
        !early.iter().any(|(kind, _)| kind == "ban.lift"),
        "nothing lifts 1 ms before until_ms: {early:?}"
    );
    assert_eq!(top(&app, "s3").await, rows(&[("bob", 25)]), "still banned");

    app.clock.set(UNTIL);
    let due = run_due(&app).await;
    assert!(
        due.contains(&("ban.lift".to_owned(), true)),
        "the lift is due at until_ms: {due:?}"
    );
    assert_eq!(top(&app, "s4").await, rows(&[("bob", 45)]));
    assert_eq!(top(&app, "s3").await, rows(&[("ann", 30), ("bob", 25)]));
    assert_eq!(top(&app, "s2").await, rows(&[("ann", 20), ("bob", 15)]));
    assert_eq!(
        top(&app, "all").await,
        Err(404),
        "a dropped season stays gone"
    );
    let back = app.key_exists("lb:{b}:s:all").await;
    assert!(!back, "the dropped season's key came back");

    let log = app
        .call(
            Method::GET,
            "/admin/boards/b/log?player=ann&limit=1",
            None,
            true,
        )
        .await;
    let last = &log.body["entries"][0];
    assert_eq!(
        (&last["action"], &last["reason"]),
        (&json!("unban"), &json!("expired")),
        "{last}"
    );
}
