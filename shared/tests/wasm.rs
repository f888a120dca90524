//! The wasm exports as JS sees them (run under node by `wasm-bindgen-test-runner`):
//! `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=.tools/bin/wasm-bindgen-test-runner \
//!  cargo test -p scorecast-shared --target wasm32-unknown-unknown`.
#![cfg(target_arch = "wasm32")]

use scorecast_shared::wasm::*;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON)]
    fn stringify(v: &JsValue) -> String;

    #[wasm_bindgen(js_namespace = JSON, js_name = parse)]
    fn json_parse(text: &str) -> JsValue;
}

#[wasm_bindgen(inline_js = "export function subscribeWithUndefined() { \
    return { type: 'subscribe', board: 'b', view: 'top', limit: undefined, radius: undefined }; } \
    export function withUndefined(obj, key) { obj[key] = undefined; return obj; } \
    export function holdsUndefined(obj, key) { \
      return Object.prototype.hasOwnProperty.call(obj, key) && obj[key] === undefined; } \
    let realNow = Date.now; \
    export function freezeDateNow(ms) { Date.now = () => ms; } \
    export function thawDateNow() { Date.now = realNow; }")]
extern "C" {
    #[wasm_bindgen(js_name = subscribeWithUndefined)]
    fn subscribe_with_undefined() -> JsValue;
    /// Sets `obj[key] = undefined` (the key present, its value undefined) and returns `obj`.
    #[wasm_bindgen(js_name = withUndefined)]
    fn with_undefined(obj: JsValue, key: &str) -> JsValue;
    #[wasm_bindgen(js_name = holdsUndefined)]
    fn holds_undefined(obj: &JsValue, key: &str) -> bool;
    /// Makes `Date.now()` return `ms` until `thaw_date_now`.
    #[wasm_bindgen(js_name = freezeDateNow)]
    fn freeze_date_now(ms: f64);
    #[wasm_bindgen(js_name = thawDateNow)]
    fn thaw_date_now();
}

/// What JS would print with `JSON.stringify`, parsed back for comparison. A `Map` would print as
/// `{}`, a BigInt would throw, so this also proves values are plain objects and numbers.
fn as_json(v: &JsValue) -> Value {
    serde_json::from_str(&stringify(v)).unwrap()
}

fn js(v: Value) -> JsValue {
    json_parse(&v.to_string())
}

/// `parseServerMsg` turns every example of docs/protocol.md into the same plain object.
#[wasm_bindgen_test]
fn parses_server_messages_into_plain_objects() {
    let frames = [
        json!({"type":"welcome","protocol":1,"player":null,"server_time_ms":1700000000000i64}),
        json!({"type":"welcome","protocol":1,"player":"alice","server_time_ms":1700000000000i64}),
        json!({"type":"ack","id":"c-17","board":"b","season":"all","score":155,"rank":1,"previous_rank":3,"duplicate":false}),
        json!({"type":"ack","id":"c-18","board":"b","season":"all","score":9007199254740991i64,"rank":1,"previous_rank":null,"duplicate":true}),
        json!({"type":"rejected","id":"c-17","code":"rate_limited","message":"slow down","retry_after_ms":850}),
        json!({"type":"top","board":"b","season":"all","total":3,"entries":[{"rank":1,"player":"bob","score":155,"name":"Bob"}],"seq":42}),
        json!({"type":"top","board":"b","season":"all","total":0,"entries":[],"seq":43,"resync":true}),
        json!({"type":"rank","board":"b","season":"all","player":"alice","score":120,"rank":3,"previous_rank":2,"seq":42}),
        json!({"type":"rank","board":"b","season":"all","player":"ann","score":null,"rank":null,"previous_rank":null,"seq":1}),
        json!({"type":"around","board":"b","season":"all","entries":[{"rank":2,"player":"a","score":-5,"reached_ms":17}],"seq":43}),
        json!({"type":"notify","kind":"reward","payload":{"season":"2025-01","rank":1,"items":[1,2]}}),
        json!({"type":"pong"}),
        json!({"type":"error","code":"bad_request","message":"nope"}),
    ];
    for frame in frames {
        let parsed = parse_server_msg(&frame.to_string())
            .unwrap_or_else(|e| panic!("{frame}: {}", e.message()));
        assert_eq!(as_json(&parsed), frame);
    }
}

/// Unknown fields are ignored, as the protocol promises.
#[wasm_bindgen_test]
fn server_messages_ignore_unknown_fields() {
    let parsed = parse_server_msg(r#"{"type":"pong","later":"field"}"#).unwrap();
    assert_eq!(as_json(&parsed), json!({"type":"pong"}));
}

/// Anything that is not a valid server message throws an `Error` with code `bad_request`.
#[wasm_bindgen_test]
fn invalid_server_messages_throw() {
    for text in [
        "not json",
        "[1]",
        r#"{"no":"type"}"#,
        r#"{"type":"teleport"}"#,
        r#"{"type":"ack","id":"c-1"}"#,
        r#"{"type":"top","board":"b","season":"all","total":"3","entries":[],"seq":1}"#,
        r#"{"type":"rejected","id":"x","code":"no_such_code","message":"m"}"#,
    ] {
        let err = parse_server_msg(text).expect_err(text);
        assert!(err.is_instance_of::<JsErr>(), "{text}");
        assert_eq!(err.code().as_deref(), Some("bad_request"), "{text}");
        assert!(
            err.message().starts_with("invalid server message"),
            "{text}: {}",
            err.message()
        );
    }
}

/// `encodeClientMsg` returns the canonical frame, with defaults filled in and unknown fields dropped.
#[wasm_bindgen_test]
fn encodes_valid_client_messages() {
    let cases = [
        (
            json!({"type":"hello","token":"a.b.c"}),
            json!({"type":"hello","token":"a.b.c"}),
        ),
        (
            json!({"type":"submit","id":"c-17","board":"b","points":60,"extra":true}),
            json!({"type":"submit","id":"c-17","board":"b","points":60}),
        ),
        (
            json!({"type":"submit","id":"c-18","board":"b","points":-9007199254740991i64}),
            json!({"type":"submit","id":"c-18","board":"b","points":-9007199254740991i64}),
        ),
        (
            json!({"type":"subscribe","board":"b","view":"top"}),
            json!({"type":"subscribe","board":"b","view":"top","limit":10}),
        ),
        (
            json!({"type":"subscribe","board":"b","view":"top","limit":20}),
            json!({"type":"subscribe","board":"b","view":"top","limit":20}),
        ),
        (
            json!({"type":"subscribe","board":"b","view":"me"}),
            json!({"type":"subscribe","board":"b","view":"me"}),
        ),
        (
            json!({"type":"subscribe","board":"b","view":"around","radius":3}),
            json!({"type":"subscribe","board":"b","view":"around","radius":3}),
        ),
        (
            json!({"type":"unsubscribe","board":"b","view":"top"}),
            json!({"type":"unsubscribe","board":"b","view":"top"}),
        ),
        (json!({"type":"ping"}), json!({"type":"ping"})),
    ];
    for (input, expected) in cases {
        let text = encode_client_msg(js(input.clone()))
            .unwrap_or_else(|e| panic!("{input}: {}", e.message()));
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            expected,
            "{input}"
        );
    }
}

/// `undefined` optional fields (as JS callers write `{limit: opts.limit}`) mean "use the default":
/// the objects below really hold the key with the value `undefined`.
#[wasm_bindgen_test]
fn undefined_fields_take_defaults() {
    let around = with_undefined(
        js(json!({"type":"subscribe","board":"b","view":"around"})),
        "radius",
    );
    assert!(holds_undefined(&around, "radius"));
    assert_eq!(
        encode_client_msg(around).unwrap(),
        r#"{"type":"subscribe","board":"b","view":"around","radius":5}"#
    );
    let top = subscribe_with_undefined();
    assert!(holds_undefined(&top, "limit") && holds_undefined(&top, "radius"));
    assert_eq!(
        encode_client_msg(top).unwrap(),
        r#"{"type":"subscribe","board":"b","view":"top","limit":10}"#
    );
}

/// A message the server would refuse throws before it is sent, with the server's error code.
#[wasm_bindgen_test]
fn invalid_client_messages_throw_with_the_servers_code() {
    let cases = [
        (
            json!({"type":"submit","id":"c-1","board":"b","points":1.5}),
            "points_out_of_range",
        ),
        (
            json!({"type":"submit","id":"c-1","board":"b","points":9007199254740992i64}),
            "points_out_of_range",
        ),
        (
            json!({"type":"submit","id":"c-1","board":"b","points":"60"}),
            "bad_request",
        ),
        (
            json!({"type":"submit","id":"c-1","board":"b"}),
            "bad_request",
        ),
        (
            json!({"type":"submit","id":"c 1","board":"b","points":1}),
            "invalid_id",
        ),
        (
            json!({"type":"submit","id":"c-1","board":"lb:{x}","points":1}),
            "invalid_id",
        ),
        (
            json!({"type":"subscribe","board":"b","view":"top","limit":101}),
            "bad_request",
        ),
        (
            json!({"type":"subscribe","board":"b","view":"around","radius":0}),
            "bad_request",
        ),
        (
            json!({"type":"subscribe","board":"b","view":"sideways"}),
            "bad_request",
        ),
        (json!({"type":"hello"}), "bad_request"),
        (json!({"type":"fly"}), "bad_request"),
        (json!({"no":"type"}), "bad_request"),
        (json!([1, 2]), "bad_request"),
        (json!("ping"), "bad_request"),
    ];
    for (input, code) in cases {
        let err = encode_client_msg(js(input.clone())).expect_err(&input.to_string());
        assert_eq!(
            err.code().as_deref(),
            Some(code),
            "{input}: {}",
            err.message()
        );
    }
    assert!(encode_client_msg(JsValue::UNDEFINED).is_err());
}

/// `isValidId` follows docs/protocol.md, "Ids": 1–64 chars of `[A-Za-z0-9_.-]`.
#[wasm_bindgen_test]
fn validates_ids() {
    for ok in ["alice", "guest-ann", "A-z_0.9", &"a".repeat(64)] {
        assert!(is_valid_id(ok), "{ok}");
    }
    for bad in ["", &"a".repeat(65), "a{b", "a}b", "a:b", "a b", "a\nb", "é"] {
        assert!(!is_valid_id(bad), "{bad:?}");
    }
}

/// `decodeScore` unpacks plain and tie-break scores into `{points, t}`.
#[wasm_bindgen_test]
fn decodes_scores() {
    let plain = decode_score(155.0, "desc", None).unwrap();
    assert_eq!(as_json(&plain), json!({"points":155,"t":0}));

    // desc, T = 26: points × 2^26 + (2^26 − 1 − t).
    let span = 1u64 << 26;
    let packed = (100 * span + (span - 1 - 7)) as f64;
    assert_eq!(
        as_json(&decode_score(packed, "desc", Some(26)).unwrap()),
        json!({"points":100,"t":7})
    );
    // asc: points × 2^26 + t.
    let packed = (100 * span + 7) as f64;
    assert_eq!(
        as_json(&decode_score(packed, "asc", Some(26)).unwrap()),
        json!({"points":100,"t":7})
    );

    assert_eq!(
        decode_score(1.5, "desc", None)
            .unwrap_err()
            .code()
            .as_deref(),
        Some("score_out_of_range")
    );
    assert_eq!(
        decode_score(1.0, "up", None).unwrap_err().code().as_deref(),
        Some("bad_request")
    );
    assert_eq!(
        decode_score(1.0, "asc", Some(60))
            .unwrap_err()
            .code()
            .as_deref(),
        Some("bad_request")
    );
}

/// The formatting exports agree with `format` and take JS numbers.
#[wasm_bindgen_test]
fn formats_numbers_for_people() {
    assert_eq!(format_thousands(1234567.0).unwrap(), "1,234,567");
    assert_eq!(format_thousands(-1000.0).unwrap(), "-1,000");
    assert_eq!(
        format_thousands(9007199254740991.0).unwrap(),
        "9,007,199,254,740,991"
    );
    assert_eq!(format_compact(1234.0).unwrap(), "1.2k");
    assert_eq!(format_compact(3_400_000.0).unwrap(), "3.4M");
    assert_eq!(format_ordinal(1.0).unwrap(), "1st");
    assert_eq!(format_ordinal(12.0).unwrap(), "12th");
    assert_eq!(format_ordinal(23.0).unwrap(), "23rd");
    assert_eq!(format_rank(Some(3.0)).unwrap(), "#3");
    assert_eq!(format_rank(None).unwrap(), "–");
    assert_eq!(format_ago(0.0, Some(120_000.0)).unwrap(), "2 min ago");
    assert_eq!(format_ago(0.0, Some(1_000.0)).unwrap(), "just now");
    // Without `nowMs` the clock is `Date.now()` (frozen here, so the wall clock plays no part).
    freeze_date_now(10_000_000.0);
    let ago = format_ago(10_000_000.0 - 3.0 * 3_600_000.0, None);
    thaw_date_now();
    assert_eq!(ago.unwrap(), "3 h ago");

    assert!(format_thousands(f64::NAN).is_err());
    assert!(format_compact(f64::INFINITY).is_err());
    assert!(format_rank(Some(-1.0)).is_err());
    assert!(format_ordinal(-2.0).is_err());
}

#[wasm_bindgen_test]
fn reports_the_protocol_version() {
    assert_eq!(protocol_version(), 1);
}
