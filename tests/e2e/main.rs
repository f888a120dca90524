//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
mod hardening;
mod live_ranks;
mod notify_jobs;
mod packing;
mod queues;
mod seasons_jobs;
mod ws;
