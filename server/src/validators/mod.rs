//! Score validators: WebAssembly modules that replay a game's proof and return the score it
//! earned, run in a sandbox that cannot hurt the server (`docs/validators.md`).
//!
//! - [`sandbox`]: the engine, checking and compiling a module against the ABI, and one
//!   verification (fuel, memory, stack and deadline limits, a fresh store per call);
//! - [`registry`]: the compiled validators of this instance, keyed by content hash, with the
//!   built-in one;
//! - [`pool`]: the threads verifications run on, off the socket and HTTP workers, behind a
//!   bounded queue.
//!
//! The built-in `2048` validator is the 2048 rules crate compiled for wasm32
//! ([`BUILTIN_2048`]).

pub mod pool;
pub mod registry;
pub mod sandbox;

pub use registry::{Digest, Registry};
pub use sandbox::{Limits, ModuleError, Sandbox, Validator, VerifyError};

/// The built-in `2048` validator (`shared/game2048/validator`, rebuilt by `cargo xtask wasm`).
pub const BUILTIN_2048: &[u8] = include_bytes!("../../validators/2048.wasm");

#[cfg(test)]
mod tests;
