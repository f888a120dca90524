//! The pub/sub broker: everything this instance does with Redis pub/sub, behind one handle.
//!
//! The hub says what it wants delivered (a [`Listener`]'s [`Listener::wanted`] set, read again
//! after every [`Broker::wanted_changed`]) and receives [`Feed`] items; it never sees a Redis
//! connection. What the broker owns:
//!
//! | file         | what it decides                                                        |
//! |--------------|------------------------------------------------------------------------|
//! | `mod.rs`     | the handle, the confirmed channels, publishing `notify`                |
//! | `plain.rs`   | the plain pub/sub connection: kept up, on exactly the wanted channels  |
//! | `sharded.rs` | on a cluster: sharded board channels per master, and the slot map      |
//!
//! On one Redis the plain connection carries `ev:{<board>}` and `notify:{<player>}`. On a
//! cluster it carries only `notify:{<player>}` (plain PUBLISH reaches every node, so any node
//! will do) and board events travel on sharded channels (`SPUBLISH` in the scripts). Whether the
//! target is a cluster is read from the [`Target`] the application parsed at start-up.
//!
//! A channel is *confirmed* once Redis acknowledged its subscription on the current connection:
//! a new view waits for its board's ([`Broker::wait_board`]) before reading its snapshot, so a
//! change committed after the read is sure to arrive as an event. When events may have been
//! missed (a connection came back, a sharded subscription moved), the listener gets
//! [`Feed::Resync`].

mod plain;
mod sharded;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use scorecast_shared::Id;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::conn::{RedisConn, Target};
use crate::error::AppResult;
use crate::keys;

/// What the broker delivers to its [`Listener`].
#[derive(Debug, PartialEq, Eq)]
pub enum Feed<'a> {
    /// A change event published on `ev:{<board>}` (board unchecked, payload as published).
    Board { board: &'a str, payload: &'a [u8] },
    /// A `notify` message published on `notify:{<player>}` (player unchecked).
    Notify { player: &'a str, payload: &'a [u8] },
    /// Events may have been missed: of every board (`None`: the plain connection came back) or
    /// of one (its sharded subscription was lost and is back).
    Resync(Option<&'a Id>),
}

/// What this instance wants delivered now.
#[derive(Debug, Default)]
pub struct Wanted {
    /// Boards with a local viewer.
    pub boards: Vec<Id>,
    /// Players with a local session.
    pub players: Vec<Id>,
}

/// The receiver of the broker's feed (the hub). Called from the broker's tasks; must not block.
pub trait Listener: Send + Sync + 'static {
    /// What should be subscribed now (read again after [`Broker::wanted_changed`]).
    fn wanted(&self) -> Wanted;
    /// One delivered item, in the order Redis delivered them per connection.
    fn feed(&self, item: Feed<'_>);
}

/// A cloneable handle on the instance's broker.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<Shared>,
}

struct Shared {
    /// The plain connection's node choices: the one Redis, or every seed of a cluster (a
    /// cluster carries PUBLISH to every node, so any node will do; the next one is tried after
    /// a loss, e.g. when the node failed).
    clients: Vec<redis::Client>,
    /// On a cluster: `redis://[user:password@]`, the prefix of a node's URL (sharded.rs).
    sharded: Option<String>,
    /// The shared multiplexed connection: PUBLISH and `CLUSTER SLOTS`.
    conn: RedisConn,
    /// Channels Redis confirmed on the current connections.
    confirmed: Mutex<HashSet<String>>,
    /// Wakes those waiting for a channel to be confirmed.
    confirmed_changed: Notify,
    /// Wake the plain and the sharded task when the wanted set changed.
    plain_changed: Notify,
    shards_changed: Notify,
}

impl Broker {
    /// A broker for `target`; `conn` is the shared connection on the same target. Nothing is
    /// subscribed before [`Broker::start`].
    pub fn new(target: &Target, conn: RedisConn) -> anyhow::Result<Broker> {
        let clients = target
            .urls()
            .iter()
            .map(|u| redis::Client::open(u.as_str()))
            .collect::<Result<Vec<_>, _>>()?;
        let sharded = match target {
            Target::Single(_) => None,
            // A node's URL: the seeds' scheme and credentials with that node's address.
            Target::Cluster(seeds) => Some(match seeds[0].rfind('@') {
                Some(at) => seeds[0][..=at].to_owned(),
                None => "redis://".to_owned(),
            }),
        };
        Ok(Broker {
            inner: Arc::new(Shared {
                clients,
                sharded,
                conn,
                confirmed: Mutex::new(HashSet::new()),
                confirmed_changed: Notify::new(),
                plain_changed: Notify::new(),
                shards_changed: Notify::new(),
            }),
        })
    }

    /// Starts the connection tasks (on the current Tokio runtime); they feed `listener` until
    /// `shutdown` turns true.
    pub fn start(&self, listener: Arc<dyn Listener>, shutdown: watch::Receiver<bool>) {
        tokio::spawn(plain::run(
            self.inner.clone(),
            listener.clone(),
            shutdown.clone(),
        ));
        if let Some(prefix) = &self.inner.sharded {
            tokio::spawn(sharded::run(
                self.inner.clone(),
                listener,
                prefix.clone(),
                shutdown,
            ));
        }
    }

    /// The listener's wanted set changed: the connections (un)subscribe to match it.
    pub fn wanted_changed(&self) {
        self.inner.plain_changed.notify_one();
        self.inner.shards_changed.notify_one();
    }

    /// Waits until Redis confirmed `board`'s event channel (or `within` passed: pub/sub is
    /// down, and the resync on reconnection covers the gap).
    pub async fn wait_board(&self, board: &Id, within: Duration) {
        let channel = keys::events(board);
        let deadline = Instant::now() + within;
        loop {
            let changed = self.inner.confirmed_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.inner.confirmed().contains(&channel) {
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

    /// Publishes `body` on `notify:{<player>}` (plain PUBLISH, on a cluster too: every node
    /// carries it); returns how many subscribers received it, this instance's own included.
    pub async fn publish_notify(&self, player: &Id, body: &str) -> AppResult<u64> {
        let mut c = self.inner.conn.clone();
        let n: u64 = redis::cmd("PUBLISH")
            .arg(keys::notify(player))
            .arg(body)
            .query_async(&mut c)
            .await?;
        Ok(n)
    }
}

impl Shared {
    fn confirmed(&self) -> MutexGuard<'_, HashSet<String>> {
        crate::sync::lock(&self.confirmed)
    }
}
