//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
mod queues;
mod seasons_jobs;
mod submit_path;
mod ws;
