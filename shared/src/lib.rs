//! Scorecast's shared vocabulary: the wire types of WebSocket protocol v1 and the HTTP API,
//! validated ids, the tie-break score codec and number formatting for people.
//!
//! Nothing here knows about tokio, actix or Redis, so the same code runs in the server and, compiled
//! to wasm32, in the browser (`wasm` module, the only place with `#[wasm_bindgen]`).

pub mod board;
pub mod codec;
pub mod error;
pub mod format;
pub mod ids;
pub mod protocol;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use board::{
    BoardConfig, LeagueTier, Op, Order, Ranking, Reset, Schedule, SubmitLimit, TieBreak,
    Tournament, BUCKET_SIZES, DEFAULT_ENDING_SOON_MS, DEFAULT_SUBMIT_LIMIT,
};
pub use codec::{Codec, CodecError, MAX_POINTS};
pub use error::ErrorCode;
pub use ids::{Id, IdError};
pub use protocol::{ClientMsg, Entry, ServerMsg, View, PROTOCOL_VERSION};
