//! End-to-end tests: one binary, real redis-server processes, real servers.

mod boards;
