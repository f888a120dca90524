//! End-to-end tests: one binary, real redis-server processes, real servers.

mod apidocs;
mod audit_log;
mod bans;
mod board_delete;
mod boards;
mod broker;
mod bucket_list;
mod buckets;
mod cluster;
mod cluster_pubsub;
mod console;
mod cors;
mod dedup;
mod hardening;
mod headers;
mod leagues;
mod live_ranks;
mod moderation;
mod moderation_kept;
mod notify_jobs;
mod operator;
mod packing;
mod previous_rank;
mod proxies;
mod queue_browser;
mod queues;
mod queues_batch;
mod refusals;
mod revocation;
mod runs_ws;
mod seasons_jobs;
mod submit_path;
mod tournaments;
mod validators;
mod wait_replicas;
mod ws;
mod ws_edges;
mod ws_limits;

// Promises proven from outside the code that keeps them: tokens and origins, the
// real binary as a process, hash slots on a cluster node.
mod auth;
mod hash_slots;
mod keys;
mod nginx;
mod process;
