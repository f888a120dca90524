//! The operator's list of a bucketed board's buckets (`GET /admin/boards/{b}/buckets`): how
//! many a season has, how many players scored in each, paged; a past season's by `season`; each
//! bad request refused with its code, changing nothing.

use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::{spawn_app_with, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;

async fn app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

async fn list(app: &TestApp, query: &str) -> (u16, Value) {
    let r = app
        .call(Method::GET, &format!("/admin/boards/{query}"), None, true)
        .await;
    (r.status.as_u16(), r.body)
}

/// Seven players on a board of buckets of 3 fill buckets 1 and 2 and open bucket 3 with one;
/// a player placed by joining a tournament counts in `open_fill` but not in `scored`; pages
/// start at bucket `offset + 1`; a new season has no buckets and the past one stays listed.
#[tokio::test]
async fn the_buckets_of_a_season_are_counted_and_paged() {
    let app = app().await;
    app.board(
        "lg",
        json!({"op": "best", "submit_limit": null, "bucket_size": 3}),
    )
    .await;
    let (s, body) = list(&app, "lg/buckets").await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body,
        json!({"board": "lg", "season": "all", "count": 0, "open_fill": 0, "buckets": []})
    );
    for i in 0..7 {
        app.score("lg", &format!("p{i}"), 10 + i).await;
    }
    let (s, body) = list(&app, "lg/buckets").await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        body,
        json!({"board": "lg", "season": "all", "count": 3, "open_fill": 1, "buckets": [
            {"bucket": 1, "scored": 3}, {"bucket": 2, "scored": 3}, {"bucket": 3, "scored": 1},
        ]})
    );
    let (_, page) = list(&app, "lg/buckets?offset=1&limit=1").await;
    assert_eq!(page["buckets"], json!([{"bucket": 2, "scored": 3}]));
    assert_eq!(page["count"], 3);
    let (_, past_end) = list(&app, "lg/buckets?offset=3").await;
    assert_eq!(past_end["buckets"], json!([]));

    // The bucket of a removed score is counted without it.
    let r = app
        .call(Method::DELETE, "/admin/boards/lg/players/p0", None, true)
        .await;
    assert_eq!(r.status, 204);
    let (_, body) = list(&app, "lg/buckets?limit=1").await;
    assert_eq!(body["buckets"], json!([{"bucket": 1, "scored": 2}]));

    // A new season starts with no buckets; the past one is still listed.
    assert_eq!(app.rollover("lg", "s2").await.status, 200);
    let (_, now) = list(&app, "lg/buckets").await;
    assert_eq!(
        (now["season"].clone(), now["count"].clone()),
        (json!("s2"), json!(0))
    );
    let (_, past) = list(&app, "lg/buckets?season=all").await;
    assert_eq!(past["count"], 3, "{past}");

    // Joining a bucketed tournament places the player without a score.
    let far = T0 + 3_600_000;
    app.board(
        "cupb",
        json!({"op": "best", "bucket_size": 2, "reset": "never",
               "tournament": {"schedule": {"start_ms": far, "end_ms": far + 60_000}}}),
    )
    .await;
    let token = app.token("kim", None);
    let r = app
        .call_as(Some(&token), Method::POST, "/v1/boards/cupb/join", None)
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let (_, body) = list(&app, "cupb/buckets").await;
    assert_eq!(
        (
            body["count"].clone(),
            body["open_fill"].clone(),
            body["buckets"].clone()
        ),
        (json!(1), json!(1), json!([{"bucket": 1, "scored": 0}]))
    );
}

/// Each bad request for the buckets is refused with its code and status, and changes no key.
#[tokio::test]
async fn bad_bucket_list_requests_are_refused_with_their_code_and_change_nothing() {
    let app = app().await;
    app.board("lg", json!({"bucket_size": 3})).await;
    app.board("plain", json!({})).await;
    app.score("lg", "p1", 5).await;
    let before = app.dump().await;
    for (query, status, code) in [
        ("lg/buckets?limit=0", 400, "bad_request"),
        ("lg/buckets?limit=1001", 400, "bad_request"),
        ("lg/buckets?offset=-1", 400, "bad_request"),
        ("lg/buckets?offset=4294967296", 400, "bad_request"),
        ("lg/buckets?bucket=1", 400, "bad_request"),
        ("lg/buckets?season=..", 400, "invalid_id"),
        ("lg/buckets?season=nope", 404, "unknown_season"),
        ("plain/buckets", 404, "not_found"),
        ("nope/buckets", 404, "unknown_board"),
    ] {
        let (s, body) = list(&app, query).await;
        assert_eq!(
            (s, body["error"]["code"].as_str().unwrap_or("")),
            (status, code),
            "{query}: {body}"
        );
    }
    let r = app
        .call(Method::GET, "/admin/boards/lg/buckets", None, false)
        .await;
    assert_eq!(r.status, 401, "{:?}", r.body);
    assert_eq!(app.dump().await, before);
}
