//! Requests refused at the front door before they reach Redis: malformed log cursors, unknown
//! fields in the admin score body, invalid UTF-8 in a WebSocket text frame, and invisible
//! characters in display names. Each refusal has its code and changes no key.

use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::spawn_app_with;
use serde_json::json;

use crate::hardening::redis_errors;

/// 2025-03-10T12:00:00Z.
const T0: i64 = 1_741_608_000_000;

/// Every malformed log cursor, `0-0` included (Redis refuses it as an exclusive end), is a 400
/// `bad_request` decided before Redis: no key changes and `scorecast_redis_errors_total` stays
/// where it was. The largest stream id is still a cursor (an empty page, not an error).
#[tokio::test]
async fn bad_log_cursors_are_400_and_cost_redis_nothing() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("l", json!({"op": "incr"})).await;
    app.score("l", "kim", 1).await;
    let before = app.dump().await;
    let errors_before = redis_errors(&app).await;

    let bad = [
        "0-0",
        "0-0.1",
        "00-0",
        "0-00",
        "-",
        "+",
        "(5-0",
        "%2B1-0",
        "1-%2B0",
        "-1-0",
        "1--1",
        "1-0-0",
        "1-0.",
        "1-0.x",
        "1-0.-1",
        "1-0.%2B1",
        "1-0.99999999999999999999",
        "18446744073709551616-0",
        "1-18446744073709551616",
        "%201-0",
        "1-0%20",
        "1-0%00",
        "%EF%BC%91-0",
        "1",
        "",
    ];
    for cursor in bad {
        let r = app
            .call(
                Method::GET,
                &format!("/admin/boards/l/log?cursor={cursor}"),
                None,
                true,
            )
            .await;
        assert_eq!(r.status, 400, "cursor {cursor:?}: {:?}", r.body);
        assert_eq!(r.code(), "bad_request", "cursor {cursor:?}: {:?}", r.body);
        // On a board that does not exist too: the cursor is checked first.
        let r = app
            .call(
                Method::GET,
                &format!("/admin/boards/nope/log?cursor={cursor}"),
                None,
                true,
            )
            .await;
        assert_eq!(r.code(), "bad_request", "cursor {cursor:?}: {:?}", r.body);
    }
    assert_eq!(
        redis_errors(&app).await,
        errors_before,
        "a bad cursor counted a Redis error"
    );
    assert_eq!(app.dump().await, before, "a bad cursor changed a key");

    for good in ["18446744073709551615-18446744073709551615", "0-1", "1-0.5"] {
        let r = app
            .call(
                Method::GET,
                &format!("/admin/boards/l/log?cursor={good}"),
                None,
                true,
            )
            .await;
        assert_eq!(r.status, 200, "cursor {good:?}: {:?}", r.body);
    }
    assert_eq!(redis_errors(&app).await, errors_before);
}
