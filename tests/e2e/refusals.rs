//! Requests refused at the front door before they reach Redis: malformed log cursors, unknown
//! fields in the admin score body, bodies written as arrays, invalid UTF-8 in a WebSocket text frame, and invisible
//! characters in display names. Each refusal has its code and changes no key.

use futures_util::SinkExt;
use reqwest::Method;
use scorecast_tests::scorecast_server::clock::Clock;
use scorecast_tests::ws::{Incoming, WsClient, WAIT};
use scorecast_tests::{player_token, spawn_app_with, ADMIN_TOKEN};
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;

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

/// The admin score endpoint refuses a body with a field it does not know, like every other admin
/// body: 400 `bad_request`, and no key changes (the misspelt field is not silently ignored while
/// the points are applied).
#[tokio::test]
async fn the_admin_score_endpoint_refuses_unknown_fields() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("s", json!({"op": "incr"})).await;
    app.score("s", "kim", 1).await;
    let before = app.dump().await;
    for body in [
        json!({"points": 5, "pionts": 5}),
        json!({"points": 5, "player": "lea"}),
        json!({"points": 5, "id": "x1", "skip_limit": true}),
        json!({"points": 5, "op": "set", "name": "Kim"}),
    ] {
        let r = app
            .admin(
                Method::POST,
                "/admin/boards/s/players/kim/score",
                body.clone(),
            )
            .await;
        assert_eq!(r.status, 400, "{body}: {:?}", r.body);
        assert_eq!(r.code(), "bad_request", "{body}: {:?}", r.body);
    }
    assert_eq!(app.dump().await, before, "a refused score changed a key");
    // The known fields still work.
    let r = app
        .admin(
            Method::POST,
            "/admin/boards/s/players/kim/score",
            json!({"points": 5, "op": "incr", "id": "x2"}),
        )
        .await;
    assert_eq!((r.status.as_u16(), &r.body["score"]), (200, &json!(6)));
}

/// A text message that is not UTF-8 closes the connection with 1007 (invalid payload data), not
/// 1002: in one frame, and in fragments that only together form the invalid sequence. A valid
/// character split across fragments is no error.
#[tokio::test]
async fn invalid_utf8_in_a_text_message_closes_with_1007() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let frame = |payload: &[u8], op: Data, fin: bool| {
        Message::Frame(Frame::message(payload.to_vec(), OpCode::Data(op), fin))
    };

    let mut one = WsClient::connect(&app.ws_url()).await;
    one.ws
        .send(frame(
            b"{\"type\":\"hello\",\"token\":\"\xff\xfe\"}",
            Data::Text,
            true,
        ))
        .await
        .unwrap();
    assert_eq!(one.expect_close(WAIT).await, Some(1007));

    let mut split = WsClient::connect(&app.ws_url()).await;
    // 0xC3 starts a two-byte character; 0x28 cannot continue it.
    split
        .ws
        .send(frame(b"{\"x\":\"\xc3", Data::Text, false))
        .await
        .unwrap();
    split
        .ws
        .send(frame(b"\x28\"}", Data::Continue, true))
        .await
        .unwrap();
    assert_eq!(split.expect_close(WAIT).await, Some(1007));

    // "é" (0xC3 0xA9) cut between its two bytes: a valid message once put together.
    let mut fine = WsClient::connect(&app.ws_url()).await;
    let hello = format!(
        "{{\"type\":\"hello\",\"token\":\"{}\",\"x\":\"\u{e9}\"}}",
        player_token("ann", None)
    );
    let bytes = hello.as_bytes();
    let cut = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
    fine.ws
        .send(frame(&bytes[..cut], Data::Text, false))
        .await
        .unwrap();
    fine.ws
        .send(frame(&bytes[cut..], Data::Continue, true))
        .await
        .unwrap();
    match fine.next_within(WAIT).await {
        Some(Incoming::Json(v)) => assert!(v["type"] == "welcome" || v["type"] == "error", "{v}"),
        other => panic!("a valid fragmented message was answered {other:?}"),
    }
}

/// Zero-width and blank characters and stray tag characters are stripped from display names
/// (the token's `name`), so two names that look the same are the same and nothing hides in a
/// name; a subdivision flag keeps its tags. The stored name is what the boards show.
#[tokio::test]
async fn display_names_lose_zero_width_and_tag_characters() {
    let app = spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await;
    app.board("n", json!({})).await;
    let hidden: String = "run this"
        .chars()
        .map(|c| char::from_u32(0xE0000 + c as u32).unwrap())
        .collect();
    let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
    for (player, name, shown) in [
        (
            "p1",
            "a\u{200B}d\u{2060}m\u{00AD}i\u{FEFF}n".to_owned(),
            "admin".to_owned(),
        ),
        ("p2", format!("eve{hidden}"), "eve".to_owned()),
        ("p3", "\u{200D}\u{3164}\u{2800}".to_owned(), String::new()),
        ("p4", format!("ann {scotland}"), format!("ann {scotland}")),
    ] {
        let mut c = WsClient::connect(&app.ws_url()).await;
        let w = c.hello(&player_token(player, Some(&name))).await;
        assert_eq!(w["type"], "welcome", "{w}");
        assert_eq!(
            c.submit(&format!("{player}-1"), "n", 1).await["type"],
            "ack"
        );
        let r = app.get(&format!("/v1/boards/n/players?ids={player}")).await;
        let entry = &r.body["entries"][0];
        assert_eq!(entry["player"], player, "{:?}", r.body);
        if shown.is_empty() {
            assert!(entry.get("name").is_none_or(|n| n.is_null()), "{entry}");
        } else {
            assert_eq!(entry["name"], shown.as_str(), "{entry}");
        }
    }
}

/// Every JSON request body is an object: the array of a body's fields in order, which serde
/// would read as that body, is 400 `bad_request` and changes nothing (a ban, a score, a rollover,
/// a job, a token, a guest login that would each have been carried out); a body without the JSON
/// content type, or none at all, is told what to send.
#[tokio::test]
async fn a_body_written_as_an_array_of_its_fields_is_refused() {
    let app = spawn_app_with(
        |s| {
            s.dev = true;
            s.workers = false;
            s.finish().unwrap();
        },
        Clock::manual(T0),
    )
    .await;
    app.board("s", json!({"op": "incr"})).await;
    app.score("s", "kim", 1).await;
    let before = app.dump().await;
    let cases = [
        (Method::PUT, "/admin/bans/kim", json!(["s", "x", null])),
        (
            Method::POST,
            "/admin/boards/s/players/kim/score",
            json!([5, null, null]),
        ),
        (Method::POST, "/admin/boards/s/rollover", json!(["s2"])),
        (
            Method::POST,
            "/admin/queues/q/jobs",
            json!([null, "email", null, null, null, null, null]),
        ),
        (
            Method::POST,
            "/admin/queues/q/jobs/bulk",
            json!({"jobs": [[null, "email", null, null, null, null, null]]}),
        ),
        (Method::POST, "/admin/tokens", json!(["kim", null, null])),
        (Method::POST, "/v1/guest", json!(["ann"])),
    ];
    for (method, path, body) in cases {
        let r = app
            .call(method.clone(), path, Some(body.clone()), true)
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "bad_request"),
            "{method} {path} {body}: {:?}",
            r.body
        );
        assert!(
            r.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("a JSON object is expected")),
            "{method} {path}: {:?}",
            r.body
        );
    }
    // No JSON content type, or no body at all: the message says what to send.
    for (content_type, body, says) in [
        (None, "{}", "Content-Type: application/json"),
        (
            Some("application/x-www-form-urlencoded"),
            "{}",
            "Content-Type: application/json",
        ),
        (
            Some("application/json"),
            "",
            "empty; a JSON object is expected",
        ),
    ] {
        let mut req = app
            .http
            .put(app.url("/admin/bans/kim"))
            .bearer_auth(ADMIN_TOKEN)
            .body(body);
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let v: serde_json::Value = res.json().await.unwrap();
        assert_eq!(status, 400, "{content_type:?} {body:?}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{content_type:?} {body:?}: {v}"
        );
    }
    assert_eq!(app.dump().await, before, "a refused body changed a key");
    // The same bodies as objects are carried out.
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/q/jobs",
            json!({"kind": "email", "payload": {"b": 1}}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}
