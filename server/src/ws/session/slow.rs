//! Slow-client detection. A client is too slow (closed with 1008) when its outbound queue stays
//! full for `slow_client_ms`, or when messages wait that long with nothing written to the
//! socket: a client that stops reading stalls the socket long before its queue fills, because
//! view updates replace each other. The socket stalls early because its kernel send buffer is
//! small (`ws.send_buffer_bytes`), so what is queued for a client is bounded by that, actix's
//! write buffer and the outbox. Its close frame is best effort (it is not reading); the kernel
//! ends its connection once it has taken nothing for `slow_client_ms` (`TCP_USER_TIMEOUT`,
//! `ws/conn.rs`), so its buffers do not stay pinned.
//!
//! The check runs on a coarse tick, and only while there is something to suspect: a timer
//! re-armed on every pass of a busy loop would cost more than the check. The timer is made by
//! the first check and given back when the session is idle again ([`SlowClient::release`]).

use std::time::Duration;

use actix_ws::CloseCode;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::{reason, Exit};
use crate::hub::{Outbox, SessionId};

/// A slow client is closed between `slow_client_ms` and 1.25 × `slow_client_ms` after it fell
/// behind: the check runs four times per window.
const CHECKS_PER_WINDOW: f64 = 4.0;
const MIN_CHECK: Duration = Duration::from_millis(10);

pub(super) struct SlowClient {
    limit: Duration,
    /// Since when messages have been waiting with nothing written to the socket.
    stalled_since: Option<Instant>,
    check: Option<Interval>,
    /// When the socket last refused a message that was waiting (its buffers were full).
    blocked_at: Option<Instant>,
}

impl SlowClient {
    pub fn new(limit: Duration) -> SlowClient {
        SlowClient {
            limit,
            stalled_since: None,
            check: None,
            blocked_at: None,
        }
    }

    /// Notes whether messages are waiting; returns that they are.
    pub fn observe(&mut self, outbox: &Outbox) -> bool {
        let pending = !outbox.is_empty();
        if !pending {
            self.stalled_since = None;
        } else if self.stalled_since.is_none() {
            self.stalled_since = Some(Instant::now());
        }
        pending
    }

    /// The socket refused a waiting message: its buffers (actix's, the kernel's) are full.
    pub fn blocked(&mut self) {
        self.blocked_at = Some(Instant::now());
    }

    /// For a connection found gone: whether messages were waiting with nothing written, or the
    /// socket refused one within the last `slow_client_ms` — the client was not reading, and
    /// the kernel may well have dropped it for that (a client that reads never fills its
    /// socket's buffers).
    pub fn was_stalled(&self) -> bool {
        self.stalled_since.is_some() || self.blocked_at.is_some_and(|t| t.elapsed() < self.limit)
    }

    /// A message went out: whatever still waits, waits from now.
    pub fn progressed(&mut self) {
        self.stalled_since = None;
    }

    /// Whether the check is worth running.
    pub fn suspect(&self, outbox: &Outbox) -> bool {
        self.stalled_since.is_some() || outbox.full_since().is_some()
    }

    /// The next check's tick (the first one at once).
    pub async fn tick(&mut self) {
        let limit = self.limit;
        self.check
            .get_or_insert_with(|| {
                let mut check =
                    tokio::time::interval(limit.div_f64(CHECKS_PER_WINDOW).max(MIN_CHECK));
                check.set_missed_tick_behavior(MissedTickBehavior::Delay);
                check
            })
            .tick()
            .await;
    }

    /// Frees the check's timer; for when nothing is suspect.
    pub fn release(&mut self) {
        self.check = None;
    }

    /// How the session ends if the client is too slow.
    pub fn verdict(&self, outbox: &Outbox, session: SessionId) -> Option<Exit> {
        if outbox
            .full_since()
            .is_some_and(|t| t.elapsed() >= self.limit)
        {
            tracing::info!(session, "closing a client that cannot keep up (1008)");
            crate::metrics::SLOW_CLOSES
                .with_label_values(&["queue_full"])
                .inc();
            return Some(Exit::Unread(reason(
                CloseCode::Policy,
                "too slow: the outbound queue stayed full",
            )));
        }
        if self
            .stalled_since
            .is_some_and(|t| t.elapsed() >= self.limit)
            && !outbox.is_empty()
        {
            tracing::info!(session, "closing a client that stopped reading (1008)");
            crate::metrics::SLOW_CLOSES
                .with_label_values(&["stalled"])
                .inc();
            return Some(Exit::Unread(reason(
                CloseCode::Policy,
                "too slow: the socket took nothing for slow_client_ms",
            )));
        }
        None
    }
}
