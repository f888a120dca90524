//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
mod hardening;
mod moderation;
mod notify_jobs;
mod operator;
mod packing;
mod queues;
mod seasons_jobs;
mod ws;
