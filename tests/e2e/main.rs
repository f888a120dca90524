//! End-to-end tests: one binary, real redis-server processes, real servers.

mod auth;
mod boards;
mod cluster;
mod process;
mod queues;
mod seasons_jobs;
mod ws;
