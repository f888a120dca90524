//! Rate limiting on Redis (`docs/protocol.md`, "Rate limits"). The default is the article's
//! sliding-window log (`lua/ratelimit.lua`, one ZSET entry per request); `gcra`
//! (`lua/gcra.lua`) keeps one key per subject for limits too high for a log. Both read the clock inside the script unless a test
//! clock is injected. When Redis is unreachable, the caller gets `unavailable` (fail closed).

use crate::clock::Clock;
pub use crate::config::{Algorithm, Policy};
use crate::conn::RedisConn;
use crate::error::{AppResult, RateInfo};
use crate::{keys, scripts};

#[derive(Clone)]
pub struct Limiter {
    conn: RedisConn,
    clock: Clock,
}

impl Limiter {
    pub fn new(conn: RedisConn, clock: Clock) -> Limiter {
        Limiter { conn, clock }
    }

    /// Counts one request of `subject` against `policy`.
    pub async fn try_acquire(&self, policy: &Policy, subject: &str) -> AppResult<RateInfo> {
        self.acquire_key(policy, &keys::limiter(&policy.name, subject))
            .await
    }

    /// Counts one request against the limiter state at `key`.
    pub async fn acquire_key(&self, policy: &Policy, key: &str) -> AppResult<RateInfo> {
        let mut c = self.conn.clone();
        let r: Vec<i64> = match policy.algorithm {
            Algorithm::SlidingLog => {
                scripts::SLIDING_LOG
                    .key(key)
                    .arg(policy.limit)
                    .arg(policy.window_ms)
                    .arg(uuid::Uuid::new_v4().simple().to_string())
                    .arg(self.clock.arg())
                    .invoke_async(&mut c)
                    .await?
            }
            Algorithm::Gcra => {
                scripts::GCRA
                    .key(key)
                    .arg(policy.limit)
                    .arg(policy.window_ms)
                    .arg(self.clock.arg())
                    .invoke_async(&mut c)
                    .await?
            }
        };
        let at = |i: usize| r.get(i).copied().unwrap_or(0).max(0) as u64;
        let info = RateInfo {
            allowed: at(0) == 1,
            limit: at(1),
            remaining: at(2),
            retry_after_ms: at(3),
            reset_ms: at(4),
        };
        if !info.allowed {
            crate::metrics::RATE_LIMITED
                .with_label_values(&[&policy.name])
                .inc();
        }
        Ok(info)
    }
}
