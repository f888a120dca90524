//! Scorecast server: live leaderboards over WebSocket and HTTP, on Redis sorted sets.
//!
//! Layout follows the data: `http` and `ws` are the front doors, `state::AppState::submit` is
//! the one submission core behind them, `store` is typed access to Redis, whose atomic
//! multi-step operations are the scripts in `lua/` (`scripts`), named by `keys`.

pub mod auth;
pub mod broker;
pub mod client_addr;
pub mod clock;
pub mod config;
pub mod conn;
pub mod embedded;
pub mod error;
pub mod http;
pub mod hub;
pub mod jobs;
pub mod keys;
pub mod lanes;
#[cfg(test)]
mod layering;
pub mod limiter;
pub mod metrics;
pub mod queue;
pub mod reply;
pub mod revocation;
pub mod scripts;
pub mod startup;
pub mod state;
pub mod store;
pub mod sync;
pub mod validators;
pub mod ws;

/// Every program built on this crate (the server, its load generators and tests) allocates with
/// jemalloc: the delivery path allocates a message on the hub's thread and frees it on a
/// session's, where glibc's malloc spent about a tenth of the server's CPU (BENCHMARKS.md, "The
/// allocator").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
