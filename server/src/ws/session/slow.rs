//! Slow-client detection. A client is too slow (closed with 1008) when its outbound queue stays
//! full for `slow_client_ms`, or when messages wait that long with nothing taken by the
//! connection's writer (`hub/writer.rs`): a client that stops reading stalls the socket long
//! before its queue fills, because view updates replace each other. The socket stalls early
//! because its kernel send buffer is small (`ws.send_buffer_bytes`), so what is queued for a
//! client is bounded by that, actix's write buffer (the writer is asked for more only while it
//! has room) and the outbox. Its close frame is best effort (it is not reading); the kernel
//! ends its connection once it has taken nothing for `slow_client_ms` (`TCP_USER_TIMEOUT`,
//! `ws/conn.rs`), so its buffers do not stay pinned.
//!
//! The check runs on a coarse tick, and only while there is something to suspect (the outbox
//! wakes the session when its queue becomes full or messages start to wait): a timer re-armed
//! on every pass of a busy loop would cost more than the check. The timer is made by
//! the first check and given back when the session is idle again ([`SlowClient::release`]).

use std::time::Duration;

use actix_ws::CloseCode;
use tokio::time::{Interval, MissedTickBehavior};

use super::{reason, Exit};
use crate::hub::{SessionId, Status};

/// A slow client is closed between `slow_client_ms` and 1.25 × `slow_client_ms` after it fell
/// behind: the check runs four times per window.
const CHECKS_PER_WINDOW: f64 = 4.0;
const MIN_CHECK: Duration = Duration::from_millis(10);

pub(super) struct SlowClient {
    limit: Duration,
    check: Option<Interval>,
}

impl SlowClient {
    pub fn new(limit: Duration) -> SlowClient {
        SlowClient { limit, check: None }
    }

    /// For a connection found gone: whether messages were waiting for a writer that took
    /// nothing — the client was not reading, and the kernel may well have dropped it for that
    /// (a client that reads never leaves its socket's buffers full).
    pub fn was_stalled(status: &Status) -> bool {
        status.waiting_since.is_some()
    }

    /// Whether the check is worth running.
    pub fn suspect(status: &Status) -> bool {
        status.waiting_since.is_some() || status.full_since.is_some()
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
    pub fn verdict(&self, status: &Status, session: SessionId) -> Option<Exit> {
        if status.full_since.is_some_and(|t| t.elapsed() >= self.limit) {
            tracing::info!(session, "closing a client that cannot keep up (1008)");
            crate::metrics::SLOW_CLOSES
                .with_label_values(&["queue_full"])
                .inc();
            return Some(Exit::Unread(reason(
                CloseCode::Policy,
                "too slow: the outbound queue stayed full",
            )));
        }
        if status
            .waiting_since
            .is_some_and(|t| t.elapsed() >= self.limit)
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
