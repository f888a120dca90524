//! `notify` pushes: `{"type":"notify","kind","payload"}` to every session of a player, on this
//! instance at once and on the others through `notify:{<player>}` (each instance subscribes to
//! it while the player has a session there; the publisher skips its own echo).

use bytestring::ByteString;
use scorecast_shared::{Id, ServerMsg};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Hub, Inner, SessionId};
use crate::error::{AppError, AppResult};

/// What is published on `notify:{<player>}`.
#[derive(Deserialize, Serialize)]
struct NotifyEvent {
    kind: String,
    payload: Value,
    /// The publishing instance, which has delivered locally already and skips its own echo.
    #[serde(default)]
    from: String,
}

fn message(kind: String, payload: Value) -> ByteString {
    ServerMsg::Notify { kind, payload }.to_json().into()
}

impl Hub {
    /// Pushes a `notify` message to every session of `player` on **this** instance; returns how
    /// many sessions took it (a session whose queue is full is skipped).
    fn notify_local(&self, player: &Id, kind: &str, payload: Value) -> usize {
        self.inner
            .deliver(player, message(kind.to_owned(), payload))
    }

    /// Pushes a `notify` message to `player` on **every** instance sharing this Redis: delivered
    /// here at once, then published for the others. Returns the sessions reached here and how
    /// many other instances received it; fails with `unavailable` when the publish failed
    /// (after the local delivery).
    pub async fn notify(&self, player: &Id, kind: &str, payload: Value) -> AppResult<(usize, u64)> {
        let local = self.notify_local(player, kind, payload.clone());
        let remote = self.inner.publish_notify(player, kind, payload).await?;
        Ok((local, remote))
    }
}

impl Inner {
    /// Publishes a `notify` for the other instances; returns how many received it.
    async fn publish_notify(&self, player: &Id, kind: &str, payload: Value) -> AppResult<u64> {
        let body = serde_json::to_string(&NotifyEvent {
            kind: kind.to_owned(),
            payload,
            from: self.instance.clone(),
        })
        .map_err(|e| AppError::bad_request(format!("notify payload: {e}")))?;
        let n = self.broker.publish_notify(player, &body).await?;
        // Our own subscription (if the player is connected here) counts as one receiver.
        let here = u64::from(self.players.lock(player).contains_key(player));
        Ok(n.saturating_sub(here))
    }

    fn deliver(&self, player: &Id, text: ByteString) -> usize {
        // The player's sessions, then each session's outbox: one shard at a time (a session's
        // shard is taken before a player's elsewhere).
        let ids: Vec<SessionId> = match self.players.lock(player).get(player) {
            Some(ids) => ids.iter().copied().collect(),
            None => return 0,
        };
        let outboxes: Vec<_> = ids
            .iter()
            .filter_map(|id| self.sessions.lock(id).get(id).map(|s| s.outbox.clone()))
            .collect();
        outboxes
            .iter()
            .filter(|o| o.offer(actix_ws::Message::Text(text.clone())))
            .count()
    }

    /// A `notify` published by some instance arrived for `player` (the channel's name).
    pub(super) fn on_notify(&self, player: &str, payload: &[u8]) {
        let Ok(player) = Id::parse(player) else {
            return;
        };
        match serde_json::from_slice::<NotifyEvent>(payload) {
            Ok(n) if n.from == self.instance => {}
            Ok(n) => {
                self.deliver(&player, message(n.kind, n.payload));
            }
            Err(e) => tracing::warn!(%player, error = %e, "unreadable notify message"),
        }
    }
}
