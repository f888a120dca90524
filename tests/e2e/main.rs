//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
mod cluster;
mod cluster_pubsub;
mod hardening;
mod live_ranks;
mod moderation;
mod notify_jobs;
mod operator;
mod packing;
mod queues;
mod seasons_jobs;
mod submit_path;
mod validators;
mod ws;
mod ws_limits;

// Promises proven from outside the code that keeps them: tokens and origins, the
// real binary as a process, hash slots on a cluster node.
mod auth;
mod hash_slots;
mod process;
