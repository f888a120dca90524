//! Dedicated connections for blocking commands (BZPOPMIN, BLPOP).
//!
//! A blocking command parks the whole connection it runs on until it returns, so it must never
//! run on the shared multiplexed connection (the article's warning about Lettuce holds for
//! redis-rs too): every request behind it would wait. Each waiter here gets a connection of its
//! own for the length of its wait, from a small pool. redis-rs 1.x gives async connections a
//! 500 ms response timeout by default, which would cut every longer wait short, so these
//! connections have none; instead each blocking call is bounded here by its own timeout plus a
//! grace period.

use std::sync::Mutex;
use std::time::Duration;

use scorecast_shared::ErrorCode;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::conn::{Dedicated as Conn, Dialer};
use crate::error::{AppError, AppResult};

/// How long past its own timeout a blocking reply may take before the connection counts as dead.
const GRACE: Duration = Duration::from_secs(3);
/// Idle dedicated connections kept for reuse.
const MAX_IDLE: usize = 16;

pub(crate) struct Pool {
    dialer: Dialer,
    idle: Mutex<Vec<Conn>>,
    /// At most this many waits at once (`max_waiters`), so a flood of long-polls cannot open
    /// unbounded connections to Redis.
    permits: Semaphore,
}

/// A dedicated connection, held for one wait. It goes back to the pool only after a blocking
/// call returned normally: one abandoned mid-wait (its future dropped) still has a reply in
/// flight, so it is closed instead of reused.
pub(crate) struct Dedicated<'a> {
    conn: Option<Conn>,
    clean: bool,
    pool: &'a Pool,
    _permit: SemaphorePermit<'a>,
}

impl Pool {
    pub(crate) fn new(dialer: Dialer, max_waiters: usize) -> Pool {
        Pool {
            dialer,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(max_waiters),
        }
    }

    /// A dedicated connection, waiting up to `wait` for a free slot (`None` if none came).
    pub(crate) async fn get(&self, wait: Duration) -> AppResult<Option<Dedicated<'_>>> {
        let Ok(permit) = tokio::time::timeout(wait, self.permits.acquire()).await else {
            return Ok(None);
        };
        // The semaphore is never closed, so this error arm is for completeness only.
        let permit = permit.map_err(|_| AppError::new(ErrorCode::Unavailable, "shutting down"))?;
        let reused = crate::sync::lock(&self.idle).pop();
        let conn = match reused {
            Some(c) => c,
            None => self.dialer.dedicated().await?,
        };
        Ok(Some(Dedicated {
            conn: Some(conn),
            clean: true,
            pool: self,
            _permit: permit,
        }))
    }
}

impl Dedicated<'_> {
    /// Runs a blocking command whose server-side timeout is `timeout`.
    pub(crate) async fn block<T: redis::FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        timeout: Duration,
    ) -> AppResult<T> {
        // unwrap: `conn` is only taken in Drop.
        let conn = self.conn.as_mut().unwrap();
        self.clean = false;
        match tokio::time::timeout(timeout + GRACE, conn.query::<T>(cmd)).await {
            Ok(Ok(v)) => {
                self.clean = true;
                Ok(v)
            }
            Ok(Err(e)) => Err(e.into()),
            Err(_) => {
                tracing::warn!(
                    "a blocking Redis call outlived its timeout; dropping its connection"
                );
                Err(AppError::new(
                    ErrorCode::Unavailable,
                    "the store did not answer in time",
                ))
            }
        }
    }
}

impl Drop for Dedicated<'_> {
    fn drop(&mut self) {
        if let (true, Some(c)) = (self.clean, self.conn.take()) {
            let mut idle = crate::sync::lock(&self.pool.idle);
            if idle.len() < MAX_IDLE {
                idle.push(c);
            }
        }
    }
}
