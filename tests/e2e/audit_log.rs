//! The audit log's page cap (docs/protocol.md, "Audit"): one page examines at most 10 000
//! entries, and a filtered page that stops there still has a `next_cursor`.

use reqwest::Method;
use scorecast_tests::*;
use serde_json::json;

/// The cap as docs/protocol.md states it.
const SCAN_MAX: usize = 10_000;

/// A log whose only entry of `ann` is older than 10 500 entries of `bob` (one-submission
/// entries, the oldest layout the reader lists; the stream written by the scripts is capped at
/// about 1 000 batches, so the test writes them itself): a page filtered on `ann` stops after
/// 10 000 entries with no entry and a `next_cursor`, and the page at that cursor has her entry
/// and no further cursor.
#[tokio::test]
async fn a_filtered_page_that_stops_at_the_cap_still_has_a_next_cursor() {
    let app = spawn_app().await;
    app.board("a", json!({})).await;
    let mut c = app.redis_conn().await;
    let fill = "for i = 1, tonumber(ARGV[1]) do
        local p = i == 1 and 'ann' or 'bob'
        redis.call('XADD', KEYS[1], '*', 'player', p, 'id', 's' .. i, 'points', '1', 'op', 'incr',
          'score', tostring(i), 'rank', '1', 'season', 'all', 'time_ms', tostring(1700000000000 + i))
      end";
    let _: () = redis::cmd("EVAL")
        .arg(fill)
        .arg(1)
        .arg("lb:{a}:log")
        .arg(SCAN_MAX + 501)
        .query_async(&mut c)
        .await
        .unwrap();
    let first = app
        .call(
            Method::GET,
            "/admin/boards/a/log?player=ann&limit=10",
            None,
            true,
        )
        .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(
        first.body["entries"],
        json!([]),
        "the first page examines the newest 10 000 entries only"
    );
    let cursor = first.body["next_cursor"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "a page stopped by the cap has a next_cursor: {}",
                first.body
            )
        })
        .to_owned();
    let next = app
        .call(
            Method::GET,
            &format!("/admin/boards/a/log?player=ann&limit=10&cursor={cursor}"),
            None,
            true,
        )
        .await;
    assert_eq!(next.status, 200, "{:?}", next.body);
    let entries = next.body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{}", next.body);
    assert_eq!(
        (&entries[0]["player"], &entries[0]["id"]),
        (&json!("ann"), &json!("s1"))
    );
    assert_eq!(next.body["next_cursor"], json!(null), "nothing older");
}
