//! How a `notify` job reaches a player: through a [`Notifier`], the WebSocket hub in
//! production (tests plug in their own).

use futures_util::future::BoxFuture;
use scorecast_shared::Id;
use serde_json::Value;

use crate::error::AppResult;
use crate::hub::Hub;

/// Pushes a `notify` message to a player's open WebSockets. Called from worker tasks: it may
/// await Redis, never a socket.
pub trait Notifier: Send + Sync + 'static {
    /// Sends `{"type":"notify","kind":kind,"payload":payload}` to every open session of
    /// `player`, on every instance; resolves once it was handed over (queued here, published
    /// for the others) with the number of sessions reached here, or fails (and the job is
    /// retried).
    fn notify<'a>(
        &'a self,
        player: &'a Id,
        kind: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, AppResult<usize>>;
}

/// The hub delivers to this instance's sessions and publishes for the other instances.
impl Notifier for Hub {
    fn notify<'a>(
        &'a self,
        player: &'a Id,
        kind: &'a str,
        payload: &'a Value,
    ) -> BoxFuture<'a, AppResult<usize>> {
        Box::pin(async move {
            let (local, _) = Hub::notify(self, player, kind, payload.clone()).await?;
            Ok(local)
        })
    }
}
