//! How the wasm exports read JS values and build the ones they return, now that the browser's
//! `JSON.parse` does the parsing and `wasm::from_js` / `value_to_js` copy values across (run
//! under node by `wasm-bindgen-test-runner`, like `tests/wasm.rs`).
#![cfg(target_arch = "wasm32")]

use scorecast_shared::wasm::*;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(inline_js = "
export function stringify(v) { return JSON.stringify(v); }
export function isPlainObject(v) { return Object.getPrototypeOf(v) === Object.prototype; }
export function isArrayAt(v, key) { return Array.isArray(v[key]); }
export function submitWith(kind) {
  const points = {
    nan: NaN, inf: -Infinity, big: 10n, huge: 1e300, negzero: -0, fn: () => 1,
    sym: Symbol('p'), str: '60', undef: undefined, fraction: 0.5,
  }[kind];
  return { type: 'submit', id: 'c-1', board: 'b', points };
}
export function throwingGetter() {
  return { type: 'ping', get boom() { throw new Error('getter'); } };
}
export function cyclic() { const o = { type: 'ping' }; o.self = o; return o; }
export function deep(n) { let o = 1; for (let i = 0; i < n; i++) o = [o]; return { type: 'ping', o }; }
export function sparse() { const a = []; a.length = 4294967295; return { type: 'ping', a }; }
export function arrayWithField() { const a = [1]; a.x = 2; return { type: 'ping', a }; }
export function withPrototypeField() {
  return Object.assign(Object.create({ inherited: 1 }), { type: 'ping' });
}
")]
extern "C" {
    fn stringify(v: &JsValue) -> String;
    #[wasm_bindgen(js_name = isPlainObject)]
    fn is_plain_object(v: &JsValue) -> bool;
    #[wasm_bindgen(js_name = isArrayAt)]
    fn is_array_at(v: &JsValue, key: &str) -> bool;
    #[wasm_bindgen(js_name = submitWith)]
    fn submit_with(kind: &str) -> JsValue;
    #[wasm_bindgen(js_name = throwingGetter)]
    fn throwing_getter() -> JsValue;
    fn cyclic() -> JsValue;
    fn deep(n: u32) -> JsValue;
    fn sparse() -> JsValue;
    #[wasm_bindgen(js_name = arrayWithField)]
    fn array_with_field() -> JsValue;
    #[wasm_bindgen(js_name = withPrototypeField)]
    fn with_prototype_field() -> JsValue;
}

fn as_json(v: &JsValue) -> Value {
    serde_json::from_str(&stringify(v)).unwrap()
}

/// What `parseServerMsg` returns is made of ordinary objects and arrays, as `JSON.parse` makes.
#[wasm_bindgen_test]
fn parsed_messages_are_ordinary_objects_and_arrays() {
    let top = parse_server_msg(
        r#"{"type":"top","board":"b","season":"all","total":1,"entries":[{"rank":1,"player":"p","score":2}],"seq":1}"#,
    )
    .unwrap();
    assert!(is_plain_object(&top));
    assert!(is_array_at(&top, "entries"));
}

/// A `notify` payload is any JSON: floats, nesting, nulls and non-ASCII text come back as sent.
#[wasm_bindgen_test]
fn notify_payloads_come_back_unchanged() {
    let frame = json!({"type":"notify","kind":"reward","payload":{
        "f": 2.5, "neg": -0.125, "big": 9007199254740991i64, "a": [1, null, "é ☃", [true]], "o": {}
    }});
    let parsed = parse_server_msg(&frame.to_string()).unwrap();
    assert_eq!(as_json(&parsed), frame);
}

/// Integers a JS number cannot hold exactly are not silently rounded into a valid frame.
#[wasm_bindgen_test]
fn unsafe_integers_in_server_frames_are_refused() {
    let err = parse_server_msg(
        r#"{"type":"ack","id":"c","board":"b","season":"s","score":9007199254740993,"rank":1,"previous_rank":null,"duplicate":false}"#,
    )
    .unwrap_err();
    assert_eq!(err.code().as_deref(), Some("bad_request"));
    assert_eq!(
        err.message(),
        "invalid server message: `score` must be an integer"
    );
}

/// Values JSON has no form for are refused with the code the server would answer, never
/// rounded, stringified or passed on.
#[wasm_bindgen_test]
fn js_values_without_a_json_form_are_refused() {
    for (kind, code) in [
        ("nan", "bad_request"),
        ("inf", "bad_request"),
        ("big", "bad_request"),
        ("fn", "bad_request"),
        ("sym", "bad_request"),
        ("str", "bad_request"),
        ("undef", "bad_request"),
        ("huge", "points_out_of_range"),
        ("fraction", "points_out_of_range"),
    ] {
        let err = encode_client_msg(submit_with(kind)).expect_err(kind);
        assert_eq!(
            err.code().as_deref(),
            Some(code),
            "{kind}: {}",
            err.message()
        );
    }
    // -0 is the integer 0.
    assert_eq!(
        encode_client_msg(submit_with("negzero")).unwrap(),
        r#"{"type":"submit","id":"c-1","board":"b","points":0}"#
    );
}

/// A getter that throws makes the call fail cleanly; the module keeps working afterwards.
#[wasm_bindgen_test]
fn a_throwing_getter_is_an_error_not_a_crash() {
    let err = encode_client_msg(throwing_getter()).unwrap_err();
    assert_eq!(err.code().as_deref(), Some("bad_request"));
    assert_eq!(
        encode_client_msg(json_parse(r#"{"type":"ping"}"#)).unwrap(),
        r#"{"type":"ping"}"#
    );
}

/// Shapes `JSON.parse` never makes are refused quickly instead of exhausting the stack or memory:
/// a cycle, nesting past 64 levels, a sparse array of length 2^32 − 1, an array with a field.
#[wasm_bindgen_test]
fn cycles_deep_nesting_and_odd_arrays_are_refused() {
    for (what, value) in [
        ("cyclic", cyclic()),
        ("deep 64", deep(64)),
        ("sparse", sparse()),
        ("array with a field", array_with_field()),
    ] {
        let err = encode_client_msg(value).expect_err(what);
        assert_eq!(err.code().as_deref(), Some("bad_request"), "{what}");
    }
    // Unknown fields are dropped, however they are nested, within the bound.
    assert_eq!(encode_client_msg(deep(62)).unwrap(), r#"{"type":"ping"}"#);
}

/// Only own enumerable fields count, as in `JSON.stringify`.
#[wasm_bindgen_test]
fn inherited_fields_are_not_read() {
    assert_eq!(
        encode_client_msg(with_prototype_field()).unwrap(),
        r#"{"type":"ping"}"#
    );
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON, js_name = parse)]
    fn json_parse(text: &str) -> JsValue;
}
