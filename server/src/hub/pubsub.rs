//! The hub's dedicated Redis pub/sub connection (never the shared multiplexed one): kept up,
//! subscribed to exactly the wanted channels — `ev:{<board>}` of boards with local viewers,
//! `notify:{<player>}` of players with a local session — and its messages handed to the board
//! events and notify deliveries. When it comes back after a loss, every view is resynced. On a
//! cluster it carries only the `notify` channels (plain PUBLISH reaches every node, so any node
//! will do); board events travel on sharded channels (`sharded.rs`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

use super::Inner;
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

/// Keeps the connection up until the hub shuts down.
pub(super) async fn run(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.subscribe();
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
        if sync_channels(&inner, &mut sink, &mut subscribed)
            .await
            .is_ok()
        {
            if connected_before && !inner.sharded {
                tracing::info!("pub/sub connection is back; resyncing every view");
                crate::metrics::PUBSUB_RECONNECTS.inc();
                inner.resync_all();
            }
            let mut ping = tokio::time::interval(PING_INTERVAL);
            ping.tick().await;
            loop {
                tokio::select! {
                    msg = stream.next() => {
                        let Some(msg) = msg else { break };
                        match Channel::parse(msg.get_channel_name()) {
                            Some(Channel::Events(board)) => inner.on_event(board, msg.get_payload_bytes()),
                            Some(Channel::Notify(player)) => inner.on_notify(player, msg.get_payload_bytes()),
                            None => {}
                        }
                    }
                    _ = inner.channels_changed.notified() => {
                        if sync_channels(&inner, &mut sink, &mut subscribed).await.is_err() {
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
            let mut st = inner.lock();
            for c in subscribed.drain() {
                st.confirmed.remove(&c);
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
    inner: &Inner,
    sink: &mut redis::aio::PubSubSink,
    subscribed: &mut HashSet<String>,
) -> Result<(), ()> {
    let wanted = inner.wanted_channels();
    let add: Vec<String> = wanted.difference(subscribed).cloned().collect();
    let remove: Vec<String> = subscribed.difference(&wanted).cloned().collect();
    if !add.is_empty() {
        match tokio::time::timeout(COMMAND_TIMEOUT, sink.subscribe(&add)).await {
            Ok(Ok(())) => {}
            _ => return Err(()),
        }
        subscribed.extend(add.iter().cloned());
        inner.lock().confirmed.extend(add);
        inner.confirmed_changed.notify_waiters();
    }
    if !remove.is_empty() {
        {
            let mut st = inner.lock();
            for c in &remove {
                st.confirmed.remove(c);
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

impl Inner {
    /// The channels this instance needs here: on a cluster, only the `notify` ones.
    fn wanted_channels(&self) -> HashSet<String> {
        let st = self.lock();
        let boards = (!self.sharded).then(|| st.boards.keys().map(keys::events));
        boards
            .into_iter()
            .flatten()
            .chain(st.players.keys().map(keys::notify))
            .collect()
    }

    /// Waits until Redis confirmed `channel` on the pub/sub connection (or `within` passed).
    pub(super) async fn wait_confirmed(&self, channel: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let changed = self.confirmed_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.lock().confirmed.contains(channel) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                tracing::debug!(
                    channel,
                    "pub/sub confirmation not received; the resync will cover it"
                );
                return;
            }
        }
    }

    /// Every open view is re-sent as a fresh snapshot (the pub/sub connection came back):
    /// events may have been missed, and `seq` may have restarted.
    fn resync_all(&self) {
        let mut st = self.lock();
        for b in st.boards.values_mut() {
            b.mark_resync();
        }
    }
}
