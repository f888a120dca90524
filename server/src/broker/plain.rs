//! The dedicated plain pub/sub connection (never the shared multiplexed one): kept up,
//! subscribed to exactly the wanted channels — `ev:{<board>}` of boards with local viewers,
//! `notify:{<player>}` of players with a local session — and its messages fed to the listener.
//! When it comes back after a loss, the listener gets `Feed::Resync(None)`. On a cluster it
//! carries only the `notify` channels (plain PUBLISH reaches every node, so any node will do);
//! board events travel on sharded channels (`sharded.rs`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;

use super::{Feed, Listener, Shared};
use crate::keys::{self, Channel};

/// Reconnection backoff.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection that stops answering pings (a partition, not a closed socket) is replaced.
const PING_INTERVAL: Duration = Duration::from_secs(5);
const PING_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a (UN)SUBSCRIBE may take before the connection is considered broken.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);

/// Keeps the connection up until `shutdown`.
pub(super) async fn run(
    inner: Arc<Shared>,
    listener: Arc<dyn Listener>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut connected_before = false;
    // Which of `inner.clients` to try next: moves on after every failure or loss.
    let mut node = 0usize;
    // Channels on the current connection.
    let mut subscribed = HashSet::new();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let client = &inner.clients[node % inner.clients.len()];
        let ps = match tokio::time::timeout(CONNECT_TIMEOUT, client.get_async_pubsub()).await {
            Ok(Ok(ps)) => ps,
            failed => {
                if let Ok(Err(e)) = failed {
                    tracing::debug!(error = %e, "pub/sub connection failed");
                }
                node = node.wrapping_add(1);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        backoff = BACKOFF_MIN;
        let (mut sink, mut stream) = ps.split();
        if sync_channels(&inner, &*listener, &mut sink, &mut subscribed)
            .await
            .is_ok()
        {
            if connected_before && inner.sharded.is_none() {
                tracing::info!("pub/sub connection is back; resyncing every view");
                crate::metrics::PUBSUB_RECONNECTS.inc();
                // Events may have been missed, and `seq` may have restarted.
                listener.feed(Feed::Resync(None));
            }
            let mut ping = tokio::time::interval(PING_INTERVAL);
            ping.tick().await;
            loop {
                tokio::select! {
                    msg = stream.next() => {
                        let Some(msg) = msg else { break };
                        let payload = msg.get_payload_bytes();
                        match Channel::parse(msg.get_channel_name()) {
                            Some(Channel::Events(board)) => listener.feed(Feed::Board { board, payload }),
                            Some(Channel::Notify(player)) => listener.feed(Feed::Notify { player, payload }),
                            None => {}
                        }
                    }
                    _ = inner.plain_changed.notified() => {
                        if sync_channels(&inner, &*listener, &mut sink, &mut subscribed).await.is_err() {
                            break;
                        }
                    }
                    _ = ping.tick() => {
                        let pong = tokio::time::timeout(PING_TIMEOUT, sink.ping::<redis::Value>()).await;
                        if !matches!(pong, Ok(Ok(_))) {
                            break;
                        }
                    }
                    _ = shutdown.changed() => return,
                }
            }
        }
        {
            let mut confirmed = inner.confirmed();
            for c in subscribed.drain() {
                confirmed.remove(&c);
            }
        }
        node = node.wrapping_add(1);
        tracing::warn!("pub/sub connection lost; reconnecting");
        // Whatever happens next, the views missed events: resync them once connected again.
        connected_before = true;
    }
}

/// Subscribes and unsubscribes so the connection carries exactly the wanted channels.
async fn sync_channels(
    inner: &Shared,
    listener: &dyn Listener,
    sink: &mut redis::aio::PubSubSink,
    subscribed: &mut HashSet<String>,
) -> Result<(), ()> {
    let wanted = wanted_channels(inner, listener);
    let add: Vec<String> = wanted.difference(subscribed).cloned().collect();
    let remove: Vec<String> = subscribed.difference(&wanted).cloned().collect();
    if !add.is_empty() {
        match tokio::time::timeout(COMMAND_TIMEOUT, sink.subscribe(&add)).await {
            Ok(Ok(())) => {}
            _ => return Err(()),
        }
        subscribed.extend(add.iter().cloned());
        inner.confirmed().extend(add);
        inner.confirmed_changed.notify_waiters();
    }
    if !remove.is_empty() {
        {
            let mut confirmed = inner.confirmed();
            for c in &remove {
                confirmed.remove(c);
            }
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, sink.unsubscribe(&remove)).await {
            Ok(Ok(())) => {}
            _ => return Err(()),
        }
        for c in &remove {
            subscribed.remove(c);
        }
    }
    Ok(())
}

/// The channels this connection carries: on a cluster, only the `notify` ones.
fn wanted_channels(inner: &Shared, listener: &dyn Listener) -> HashSet<String> {
    let wanted = listener.wanted();
    let boards = inner
        .sharded
        .is_none()
        .then(|| wanted.boards.iter().map(keys::events));
    boards
        .into_iter()
        .flatten()
        .chain(wanted.players.iter().map(keys::notify))
        .collect()
}
