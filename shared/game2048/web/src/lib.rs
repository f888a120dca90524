//! The 2048 rules for the browser: [`scorecast_game2048`] behind wasm-bindgen, so `/play` plays
//! with the same code the server's `2048` validator replays. `cargo xtask wasm` builds it into
//! `web/game/pkg/` (`game2048.js` and `game2048_bg.wasm`).
//!
//! ```js
//! import init, { Game2048 } from "/game/pkg/game2048.js";
//! await init();
//! const game = new Game2048(seed);      // the run's seed (u32)
//! const s = game.play("left");          // {cells, score, moves, moved, gained, over, maxTile}
//! const proof = game.moveLog();         // Uint8Array, one byte per move that moved: u d l r
//! ```
//!
//! The state crosses into JavaScript as a plain object through serde-wasm-bindgen ([`State`]).

use scorecast_game2048::{Dir, Game, Moved};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// The board side on `/play`.
pub const SIZE: usize = 4;

/// What the page draws and reports after a move: the cells (row by row, 0 for empty), the score,
/// the number of moves that moved, what the last move did, whether the game is over and the
/// largest tile. In JavaScript the fields are camelCase (`maxTile`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub cells: [u32; SIZE * SIZE],
    pub score: u64,
    pub moves: u32,
    pub moved: bool,
    pub gained: u32,
    pub over: bool,
    pub max_tile: u32,
}

/// One game and its move log, in plain Rust (the wasm class [`Game2048`] wraps it).
#[derive(Clone, Debug)]
pub struct Session {
    seed: u32,
    game: Game<SIZE>,
    log: Vec<u8>,
    last: Moved,
}

impl Session {
    /// A new game from `seed`: two tiles, an empty log.
    pub fn new(seed: u32) -> Self {
        Session {
            seed,
            game: Game::new(seed),
            log: Vec::new(),
            last: Moved::default(),
        }
    }

    /// Plays `dir`; a move that moved is appended to the log, one that did not changes nothing
    /// (so the log is exactly what the validator accepts).
    pub fn play(&mut self, dir: Dir) -> State {
        self.last = self.game.play(dir);
        if self.last.moved {
            self.log.push(dir.as_byte());
        }
        self.state()
    }

    pub fn state(&self) -> State {
        let mut cells = [0; SIZE * SIZE];
        for (cell, v) in cells.iter_mut().zip(self.game.board.cells.iter().flatten()) {
            *cell = *v;
        }
        State {
            cells,
            score: self.game.score,
            moves: self.game.moves,
            moved: self.last.moved,
            gained: self.last.gained,
            over: self.game.over,
            max_tile: self.game.board.max_tile(),
        }
    }

    /// What `dir` would do (moved, points) without playing it or drawing a tile.
    pub fn peek(&self, dir: Dir) -> Moved {
        if self.game.over {
            return Moved::default();
        }
        self.game.board.slide(dir).1
    }

    /// The proof of this game: one byte per move that moved (`u`, `d`, `l`, `r`).
    pub fn log(&self) -> &[u8] {
        &self.log
    }

    pub fn seed(&self) -> u32 {
        self.seed
    }
}

/// One game of 2048 in the browser.
#[wasm_bindgen]
pub struct Game2048 {
    session: Session,
}

#[wasm_bindgen]
impl Game2048 {
    /// A new game from `seed` (taken modulo 2³², as the validator takes the run's seed).
    #[wasm_bindgen(constructor)]
    pub fn new(seed: u32) -> Game2048 {
        Game2048 {
            session: Session::new(seed),
        }
    }

    /// Plays `up`, `down`, `left` or `right` and returns the state; throws on any other name.
    pub fn play(&mut self, dir: &str) -> Result<JsValue, JsValue> {
        let d = dir_named(dir)?;
        to_js(&self.session.play(d))
    }

    /// What `dir` would do, `{moved, gained}`, without playing it (for hints and tests).
    pub fn peek(&self, dir: &str) -> Result<JsValue, JsValue> {
        let d = dir_named(dir)?;
        let m = self.session.peek(d);
        to_js(&Peek {
            moved: m.moved,
            gained: m.gained,
        })
    }

    /// The state (what the last move did included).
    pub fn state(&self) -> Result<JsValue, JsValue> {
        to_js(&self.session.state())
    }

    /// A copy of the move log, the proof to submit.
    #[wasm_bindgen(js_name = moveLog)]
    pub fn move_log(&self) -> Vec<u8> {
        self.session.log().to_vec()
    }

    #[wasm_bindgen(getter)]
    pub fn seed(&self) -> u32 {
        self.session.seed()
    }
}

/// What a move would do, for [`Game2048::peek`].
#[derive(Serialize)]
struct Peek {
    moved: bool,
    gained: u32,
}

fn dir_named(name: &str) -> Result<Dir, JsValue> {
    Dir::from_name(name)
        .ok_or_else(|| JsError::new("unknown direction: up, down, left or right").into())
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    serde_wasm_bindgen::to_value(value).map_err(JsValue::from)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use scorecast_validator_2048::validate_proof;

    /// The log holds the moves that moved and nothing else, and the validator scores it as the
    /// game scored it: what the page submits is what the server computes.
    #[test]
    fn the_log_is_a_proof_of_the_score() {
        let mut s = Session::new(7);
        let mut idle = 0;
        for i in 0..400 {
            let before = s.log().len();
            let st = s.play(Dir::ALL[(i * 7 / 3) % 4]);
            assert_eq!(s.log().len(), before + usize::from(st.moved));
            idle += usize::from(!st.moved);
            if st.over {
                break;
            }
        }
        let st = s.state();
        assert!(
            idle > 0,
            "some presses did not move, so skipping them was checked"
        );
        assert!(st.score > 0);
        assert_eq!(s.log().len(), st.moves as usize);
        assert_eq!(validate_proof(7, s.log(), 600_000), st.score as i64);
    }

    /// The state reports the board row by row, the last move's points and the largest tile; `peek`
    /// says what a move would do without doing it.
    #[test]
    fn state_reports_the_move() {
        let mut s = Session::new(42);
        let start = s.state();
        assert_eq!(start.cells.iter().filter(|&&v| v != 0).count(), 2);
        assert!(!start.moved && start.gained == 0 && start.moves == 0);
        let mut gained = 0;
        for i in 0..200 {
            let st = s.play(Dir::ALL[i % 4]);
            gained += u64::from(st.gained);
            assert_eq!(st.score, gained);
            assert_eq!(st.max_tile, *st.cells.iter().max().unwrap());
            let peek = s.peek(Dir::ALL[(i + 1) % 4]);
            let mut copy = s.clone();
            let next = copy.play(Dir::ALL[(i + 1) % 4]);
            assert_eq!((peek.moved, peek.gained), (next.moved, next.gained));
            assert_eq!(
                st.cells.as_slice(),
                s.game
                    .board
                    .cells
                    .iter()
                    .flatten()
                    .copied()
                    .collect::<Vec<_>>()
            );
        }
        assert!(gained > 0);
    }
}
