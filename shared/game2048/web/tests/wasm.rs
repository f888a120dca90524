//! The game class as JavaScript sees it (run under node by `wasm-bindgen-test-runner`, the
//! `wasm tests` step of `cargo xtask test`): the state object serde-wasm-bindgen builds, the move
//! log, `peek`, and the refusal of an unknown direction.
#![cfg(target_arch = "wasm32")]

use scorecast_game2048_web::Game2048;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = JSON)]
    fn stringify(v: &JsValue) -> String;
}

fn json(v: &JsValue) -> Value {
    serde_json::from_str(&stringify(v)).unwrap()
}

/// The state is a plain object with exactly the fields the page reads, numbers as numbers.
#[wasm_bindgen_test]
fn the_state_is_a_plain_object() {
    let g = Game2048::new(7);
    let s = json(&g.state().unwrap());
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["cells", "gained", "maxTile", "moved", "moves", "over", "score"]
    );
    let cells: Vec<u64> = s["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(cells.len(), 16);
    assert_eq!(cells.iter().filter(|&&v| v != 0).count(), 2);
    assert_eq!(s["maxTile"].as_u64(), cells.iter().max().copied());
    assert_eq!(
        (s["score"].as_u64(), s["moves"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(g.seed(), 7);
}

/// Each move that moved adds its byte to the log; `peek` tells what a move would do and plays
/// nothing; a name that is no direction throws and changes nothing.
#[wasm_bindgen_test]
fn moves_peek_and_the_log() {
    let mut g = Game2048::new(42);
    let mut log = Vec::new();
    for (i, dir) in ["left", "down", "right", "up"]
        .iter()
        .cycle()
        .take(60)
        .enumerate()
    {
        let peek = json(&g.peek(dir).unwrap());
        let before = json(&g.state().unwrap());
        assert_eq!(
            json(&g.state().unwrap()),
            before,
            "peek played nothing ({i})"
        );
        let s = json(&g.play(dir).unwrap());
        assert_eq!(s["moved"], peek["moved"], "{i}");
        assert_eq!(s["gained"], peek["gained"], "{i}");
        if s["moved"] == Value::Bool(true) {
            log.push(dir.as_bytes()[0]);
        }
    }
    assert_eq!(g.move_log(), log);
    let before = json(&g.state().unwrap());
    assert!(g.play("sideways").is_err());
    assert!(g.peek("sideways").is_err());
    assert_eq!(json(&g.state().unwrap()), before);
    assert_eq!(g.move_log(), log);
}
