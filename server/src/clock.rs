//! Whose clock the scripts use. Production reads Redis's `TIME` inside each script, so
//! instances with skewed clocks agree; tests inject a [`Clock::Manual`] (the article's
//! MutableClock) and the server passes its value to every script instead.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub enum Clock {
    #[default]
    Redis,
    Manual(Arc<AtomicI64>),
}

impl Clock {
    pub fn manual(start_ms: i64) -> Clock {
        Clock::Manual(Arc::new(AtomicI64::new(start_ms)))
    }

    /// The script argument: empty means "read Redis TIME".
    pub fn arg(&self) -> String {
        match self {
            Clock::Redis => String::new(),
            Clock::Manual(t) => t.load(Ordering::SeqCst).to_string(),
        }
    }

    /// Moves a manual clock forward (no effect on the Redis clock).
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.fetch_add(ms, Ordering::SeqCst);
        }
    }

    pub fn set(&self, ms: i64) {
        if let Clock::Manual(t) = self {
            t.store(ms, Ordering::SeqCst);
        }
    }

    /// Now as this process sees it (the injected time under a manual clock). Used outside the
    /// scripts: `welcome.server_time_ms`, when to schedule season rollovers, and the
    /// `granted_at_ms` of reward records (which are stored in Redis). The scripts themselves
    /// read Redis `TIME` (see [`Clock::arg`]), so instances with skewed clocks agree on scores.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::Redis => chrono::Utc::now().timestamp_millis(),
            Clock::Manual(t) => t.load(Ordering::SeqCst),
        }
    }
}
