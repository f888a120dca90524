//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
mod cluster;
mod hardening;
mod notify_jobs;
mod packing;
mod queues;
mod seasons_jobs;
mod ws;
