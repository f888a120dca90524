//! End-to-end tests: one binary, real redis-server processes, real servers.

mod audit_log;
mod bans;
mod board_delete;
mod boards;
mod cluster;
mod cluster_pubsub;
mod dedup;
mod hardening;
mod live_ranks;
mod moderation;
mod notify_jobs;
mod operator;
mod packing;
mod previous_rank;
mod queues;
mod revocation;
mod seasons_jobs;
mod submit_path;
mod wait_replicas;
mod ws;
mod ws_edges;
mod ws_limits;

// Promises proven from outside the code that keeps them (issue 8): tokens and origins, the
// real binary as a process, hash slots on a cluster node.
mod auth;
mod hash_slots;
mod process;
