//! Cluster mode: a board's change events travel on its sharded channel (`SPUBLISH ev:{<board>}`
//! in the scripts), which only the master owning the board's slot (and its replicas) carries.
//! This task keeps one RESP3 connection per master that owns a watched board (a board with a
//! local viewer) and `SSUBSCRIBE`s each channel on the master of its slot. A subscription ends
//! when the node's connection drops or stops answering (a failover) or the node says
//! `sunsubscribe` on its own (its slot moved away): every channel of that node is then
//! subscribed again where `CLUSTER SLOTS` says its slot lives now, and its board gets a
//! `Feed::Resync` once it is (events may have been missed in between).
//!
//! `notify:{<player>}` channels stay on the plain pub/sub connection of `plain.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{PushInfo, PushKind, Value};
use scorecast_shared::Id;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Feed, Listener, Shared};
use crate::keys::{self, Channel};

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an (S)UNSUBSCRIBE, a PING or `CLUSTER SLOTS` may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// A node that stops answering pings (a partition, not a closed socket) is replaced.
const PING_INTERVAL: Duration = Duration::from_secs(5);

/// A push from the node connection `(address, generation)`.
type Push = (String, u64, PushInfo);

struct Node {
    conn: MultiplexedConnection,
    /// Tells this connection's pushes from those of an earlier one to the same address.
    generation: u64,
    channels: HashSet<String>,
}

struct Shards {
    inner: Arc<Shared>,
    listener: Arc<dyn Listener>,
    /// `redis://[user:password@]`: a node's URL is this, `host:port` and the RESP3 option.
    url_prefix: String,
    /// `(first, last, master address)` of every slot range, from `CLUSTER SLOTS`.
    slots: Vec<(u16, u16, String)>,
    /// Read `slots` again before the next subscription (a node failed or redirected).
    slots_stale: bool,
    nodes: HashMap<String, Node>,
    /// Each subscribed channel's node.
    owner: HashMap<String, String>,
    /// Channels whose subscription ended without being asked to: their boards resync once
    /// they are subscribed again.
    lost: HashSet<String>,
    pushes: mpsc::UnboundedSender<Push>,
    next_generation: u64,
}

/// Keeps the sharded subscriptions until `shutdown`.
pub(super) async fn run(
    inner: Arc<Shared>,
    listener: Arc<dyn Listener>,
    url_prefix: String,
    mut shutdown: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut sh = Shards {
        inner: inner.clone(),
        listener,
        url_prefix,
        slots: Vec::new(),
        slots_stale: true,
        nodes: HashMap::new(),
        owner: HashMap::new(),
        lost: HashSet::new(),
        pushes: tx,
        next_generation: 0,
    };
    let mut ping = tokio::time::interval(PING_INTERVAL);
    ping.tick().await;
    let mut backoff = BACKOFF_MIN;
    let mut dirty = true;
    // After a failed sync, no new attempt before this (events keep flowing meanwhile).
    let mut retry_at: Option<Instant> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        if dirty && retry_at.is_none_or(|t| Instant::now() >= t) {
            if sh.sync().await {
                dirty = false;
                retry_at = None;
                backoff = BACKOFF_MIN;
            } else {
                retry_at = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
        let retry_after = async {
            match retry_at {
                Some(t) if dirty => tokio::time::sleep_until(t).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            push = rx.recv() => {
                // The sender lives in `sh`, so the channel never closes.
                if let Some((addr, generation, push)) = push {
                    dirty |= sh.on_push(&addr, generation, push);
                }
            }
            _ = inner.shards_changed.notified() => dirty = true,
            _ = ping.tick() => dirty |= sh.ping_all().await,
            _ = retry_after => {}
            _ = shutdown.changed() => return,
        }
    }
}

impl Shards {
    /// Handles a node's push; true when subscriptions were lost.
    fn on_push(&mut self, addr: &str, generation: u64, push: PushInfo) -> bool {
        if self.nodes.get(addr).map(|n| n.generation) != Some(generation) {
            return false; // from a connection already replaced
        }
        let channel = match push.data.first() {
            Some(Value::BulkString(b)) => std::str::from_utf8(b).ok(),
            _ => None,
        };
        match push.kind {
            PushKind::SMessage => {
                if let (Some(Channel::Events(board)), Some(Value::BulkString(payload))) =
                    (channel.and_then(Channel::parse), push.data.get(1))
                {
                    self.listener.feed(Feed::Board { board, payload });
                }
                false
            }
            // The node gave up a channel we did not unsubscribe (its slot left it): the
            // connection's reply order may be off, so the whole node is replaced.
            PushKind::SUnsubscribe
                if channel.is_some_and(|c| self.owner.get(c).is_some_and(|a| a == addr)) =>
            {
                tracing::info!(
                    node = addr,
                    "a slot left the node; moving its subscriptions"
                );
                self.node_lost(addr);
                true
            }
            PushKind::Disconnection => {
                tracing::warn!(node = addr, "sharded pub/sub connection lost");
                self.node_lost(addr);
                true
            }
            _ => false,
        }
    }

    /// Drops `addr`'s connection: its channels are lost and the slot map is read again.
    fn node_lost(&mut self, addr: &str) {
        let Some(node) = self.nodes.remove(addr) else {
            return;
        };
        crate::metrics::PUBSUB_RECONNECTS.inc();
        let mut confirmed = self.inner.confirmed();
        for c in node.channels {
            confirmed.remove(&c);
            self.owner.remove(&c);
            self.lost.insert(c);
        }
        self.slots_stale = true;
    }

    /// Pings every node; true when one did not answer (and was dropped).
    async fn ping_all(&mut self) -> bool {
        let mut dead = Vec::new();
        for (addr, node) in &mut self.nodes {
            let pong = tokio::time::timeout(
                COMMAND_TIMEOUT,
                redis::cmd("PING").query_async::<Value>(&mut node.conn),
            )
            .await;
            if !matches!(pong, Ok(Ok(_))) {
                dead.push(addr.clone());
            }
        }
        for addr in &dead {
            self.node_lost(addr);
        }
        !dead.is_empty()
    }

    /// Subscribes and unsubscribes so the nodes carry exactly the wanted channels; false when
    /// some are still missing (retried after a backoff).
    async fn sync(&mut self) -> bool {
        let wanted: HashSet<String> = self
            .listener
            .wanted()
            .boards
            .iter()
            .map(keys::events)
            .collect();
        self.lost.retain(|c| wanted.contains(c));
        let remove: Vec<String> = self
            .owner
            .keys()
            .filter(|c| !wanted.contains(*c))
            .cloned()
            .collect();
        for c in remove {
            self.unsubscribe(&c).await;
        }
        let missing: Vec<String> = wanted
            .into_iter()
            .filter(|c| !self.owner.contains_key(c))
            .collect();
        if missing.is_empty() {
            return true;
        }
        let complete = self.subscribe_missing(&missing).await;
        // A channel not subscribed now is lost too: a view may have read its snapshot without
        // waiting for it (the confirmation timed out), so its board resyncs once subscribed.
        for c in missing {
            if !self.owner.contains_key(&c) {
                self.lost.insert(c);
            }
        }
        complete
    }

    /// Subscribes `missing` where the slot map puts them; false when some are still missing.
    async fn subscribe_missing(&mut self, missing: &[String]) -> bool {
        if self.slots_stale {
            match self.read_slots().await {
                Ok(slots) => {
                    self.slots = slots;
                    self.slots_stale = false;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "CLUSTER SLOTS failed");
                    return false;
                }
            }
        }
        let mut by_node: HashMap<String, Vec<String>> = HashMap::new();
        for c in missing {
            let slot = keys::slot(c);
            match self
                .slots
                .iter()
                .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            {
                Some((_, _, addr)) => by_node.entry(addr.clone()).or_default().push(c.clone()),
                None => self.slots_stale = true,
            }
        }
        let mut complete = !self.slots_stale;
        for (addr, channels) in by_node {
            match self.subscribe(&addr, &channels).await {
                Ok(true) => {}
                // Some were redirected (MOVED: the slot map is behind): read it again.
                Ok(false) => {
                    self.slots_stale = true;
                    complete = false;
                }
                Err(e) => {
                    tracing::debug!(node = addr, error = %e, "SSUBSCRIBE failed");
                    self.node_lost(&addr);
                    self.slots_stale = true;
                    complete = false;
                }
            }
        }
        complete
    }

    async fn unsubscribe(&mut self, channel: &str) {
        let Some(addr) = self.owner.remove(channel) else {
            return;
        };
        self.inner.confirmed().remove(channel);
        let Some(node) = self.nodes.get_mut(&addr) else {
            return;
        };
        node.channels.remove(channel);
        let done = tokio::time::timeout(
            COMMAND_TIMEOUT,
            redis::cmd("SUNSUBSCRIBE")
                .arg(channel)
                .query_async::<Value>(&mut node.conn),
        )
        .await;
        if !matches!(done, Ok(Ok(_))) {
            self.node_lost(&addr);
        } else if node.channels.is_empty() {
            self.nodes.remove(&addr);
        }
    }

    /// `SSUBSCRIBE`s `channels` on `addr` (connecting first if needed). False when the node
    /// refused some (another node owns their slot); an error when the connection failed.
    async fn subscribe(&mut self, addr: &str, channels: &[String]) -> anyhow::Result<bool> {
        if !self.nodes.contains_key(addr) {
            let generation = self.next_generation;
            self.next_generation += 1;
            let conn = self.connect(addr, generation).await?;
            self.nodes.insert(
                addr.to_owned(),
                Node {
                    conn,
                    generation,
                    channels: HashSet::new(),
                },
            );
        }
        let node = self.nodes.get_mut(addr).expect("connected above");
        // One command per channel: each is answered by exactly one confirmation.
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for c in channels {
            pipe.cmd("SSUBSCRIBE").arg(c);
        }
        let replies: Vec<redis::RedisResult<Value>> =
            tokio::time::timeout(COMMAND_TIMEOUT, pipe.query_async(&mut node.conn)).await??;
        if replies.len() != channels.len() {
            anyhow::bail!("{} replies to {} SSUBSCRIBE", replies.len(), channels.len());
        }
        let mut all = true;
        let mut taken = Vec::new();
        for (c, reply) in channels.iter().zip(replies) {
            if let Err(e) = reply {
                tracing::debug!(node = addr, channel = c, error = %e, "SSUBSCRIBE refused");
                all = false;
                continue;
            }
            node.channels.insert(c.clone());
            self.owner.insert(c.clone(), addr.to_owned());
            if self.lost.remove(c) {
                if let Some(Channel::Events(board)) = Channel::parse(c) {
                    if let Ok(board) = Id::parse(board) {
                        self.listener.feed(Feed::Resync(Some(&board)));
                    }
                }
            }
            taken.push(c.clone());
        }
        // Confirmed after the resyncs: a view that waited for the channel is covered either way.
        self.inner.confirmed().extend(taken);
        self.inner.confirmed_changed.notify_waiters();
        Ok(all)
    }

    async fn connect(&self, addr: &str, generation: u64) -> anyhow::Result<MultiplexedConnection> {
        let client = redis::Client::open(format!("{}{addr}/?protocol=resp3", self.url_prefix))?;
        let tx = self.pushes.clone();
        let tag = addr.to_owned();
        let cfg = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_push_sender(move |p: PushInfo| tx.send((tag.clone(), generation, p)));
        Ok(client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await?)
    }

    /// The master of every slot range, from any node (through the shared cluster connection).
    async fn read_slots(&self) -> anyhow::Result<Vec<(u16, u16, String)>> {
        let mut c = self.inner.conn.clone();
        let v: Value = tokio::time::timeout(
            COMMAND_TIMEOUT,
            redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut c),
        )
        .await??;
        parse_slots(v).ok_or_else(|| anyhow::anyhow!("unreadable CLUSTER SLOTS reply"))
    }
}

/// `CLUSTER SLOTS`: `[[first, last, [host, port, id, …], replicas…], …]`.
fn parse_slots(v: Value) -> Option<Vec<(u16, u16, String)>> {
    let Value::Array(ranges) = v else {
        return None;
    };
    let int = |v: &Value| match v {
        Value::Int(i) => u16::try_from(*i).ok(),
        _ => None,
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    ranges
        .iter()
        .map(|r| {
            let Value::Array(r) = r else { return None };
            let Value::Array(master) = r.get(2)? else {
                return None;
            };
            let host = text(master.first()?)?;
            let port = match master.get(1)? {
                Value::Int(p) => *p,
                _ => return None,
            };
            Some((int(r.first()?)?, int(r.get(1)?)?, format!("{host}:{port}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_name_their_master() {
        let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let reply = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(5460),
            Value::Array(vec![b("127.0.0.1"), Value::Int(7000), b("id1")]),
            Value::Array(vec![b("127.0.0.1"), Value::Int(7003), b("id2")]),
        ])]);
        assert_eq!(
            parse_slots(reply),
            Some(vec![(0, 5460, "127.0.0.1:7000".to_owned())])
        );
        assert_eq!(parse_slots(Value::Nil), None);
    }
}
