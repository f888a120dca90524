//! The per-instance hub: who is connected, who watches what, and what the pub/sub feed changes.
//!
//! One hub per server instance, behind a cloneable [`Hub`] handle. Its state is plain maps under
//! std `Mutex`es held only for map updates and never across an `.await` (mini-redis's `db.rs`
//! reasoning; every Redis read happens outside them), none of them over the whole instance:
//! the *registry* — sessions (and the views each holds), watched boards by id, players, client
//! addresses — is four maps split into shards by key, each shard under its own lock
//! (`shards.rs`, centrifuge's sharded hub); and each watched board has a [`board::BoardCell`]
//! (its views, standings and dirty state), so a board's flush never blocks another board or the
//! registry. Lock order: a session's shard, then a player's or a board's shard, then the board's
//! cell; an address's shard is taken alone. Redis pub/sub itself is the broker's
//! (`crate::broker`): the hub tells it which boards and players it wants and receives its feed.
//! Each file has one job:
//!
//! | file           | what it decides                                                          |
//! |----------------|--------------------------------------------------------------------------|
//! | `mod.rs`       | the handle, the registry, start and graceful shutdown                    |
//! | `shards.rs`    | the registry's maps: sharded by key, a lock per shard                    |
//! | `members.rs`   | admission per client address, sessions and players; a session's drop     |
//! | `outbox.rs`    | a session's bounded outbound queue (the hub offers, the writer takes)    |
//! | `writer.rs`    | the connection's writer: takes the outbox's messages, actix sends them   |
//! | `subscribe.rs` | a new view: register, wait for its channel, read and queue the snapshot  |
//! | `feed.rs`      | what the hub wants from the broker, and where the broker's feed goes     |
//! | `events.rs`    | what a board's change event makes dirty                                  |
//! | `commit.rs`    | this instance's own batches: each submitter's `me` update with its ack   |
//! | `board.rs`     | one watched board's cell: subscriptions (indexed), dirty state           |
//! | `changes.rs`   | what a flush takes from its board: dirty state, derivations, metrics     |
//! | `derive.rs`    | `me` ranks derived from the change events, where exact (pure)            |
//! | `treap.rs`     | the derivation's ranks: a treap keyed by rank with a lazy range add      |
//! | `plan.rs`      | which views a flush recomputes and which reads serve them (pure)         |
//! | `worker.rs`    | the per-board flush task: coalesce, read, offer; the push budget         |
//! | `render.rs`    | what a view's message says, and the hash that tells whether it changed   |
//! | `notify.rs`    | `notify` pushes, here and on the other instances                         |
//!
//! Ordering: a subscription's messages carry strictly increasing `seq` (anything at or below the
//! last one sent is dropped). When the broker reports events may have been missed, or a read shows
//! `seq` going backwards (Redis lost its data), every open view gets a fresh snapshot with
//! `"resync": true` and its ordering restarts from there. The wire format is in
//! `docs/protocol.md`; the path of an update through these files in `docs/architecture.md`.

mod around;
mod board;
mod budget;
mod changes;
mod commit;
pub mod derive;
mod events;
mod feed;
mod holds;
mod members;
mod notify;
pub mod outbox;
mod plan;
mod render;
mod shards;
mod subscribe;
mod treap;
mod window;
mod worker;
mod writer;

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use scorecast_shared::Id;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::broker::Broker;
use crate::config::{Settings, WsSettings};
use crate::store::Store;
use board::BoardCell;
use scorecast_shared::protocol::ViewKind;
use shards::Shards;

pub use board::ViewCounts;
pub use members::{AddrSlot, Member};
pub use outbox::{Outbox, Status, ViewKey};
pub use writer::Writer;

pub type SessionId = u64;

/// A cloneable handle to the instance's hub.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    /// The registry: every open session by id, with the views it holds.
    sessions: Shards<SessionId, SessionEntry>,
    /// The watched boards (by cell id: a bucket's views have a cell of their own).
    boards: Shards<Id, Arc<BoardCell>>,
    /// Local sessions of each authenticated player (for `notify`).
    players: Shards<Id, HashSet<SessionId>>,
    /// Open connections per client address (`max_conns_per_addr`).
    conns: Shards<IpAddr, u32>,
    /// The last subscription generation handed out.
    next_gen: AtomicU64,
    store: Store,
    /// Redis pub/sub: board events and `notify` in, `notify` out.
    broker: Broker,
    ws: WsSettings,
    /// `me` and `around` messages the flushes of all boards may offer per second.
    budget: budget::PushBudget,
    max_conns_per_addr: u32,
    shutdown: watch::Sender<bool>,
    /// Wakes whoever waits for every session to end (graceful shutdown).
    sessions_changed: Notify,
    next_id: AtomicU64,
    /// This instance's id in `notify` messages.
    instance: String,
}

struct SessionEntry {
    outbox: Arc<Outbox>,
    player: Option<Id>,
    /// The views the session holds (or is subscribing to), so that dropping it visits only
    /// their boards.
    views: Vec<ViewKey>,
}

impl Hub {
    /// Creates the hub and starts `broker` feeding it (on the current Tokio runtime).
    pub fn start(broker: Broker, store: Store, settings: &Settings) -> Hub {
        let (shutdown, _) = watch::channel(false);
        let hub = Hub {
            inner: Arc::new(Inner {
                sessions: Shards::default(),
                boards: Shards::default(),
                players: Shards::default(),
                conns: Shards::default(),
                next_gen: AtomicU64::new(0),
                store,
                broker,
                ws: settings.ws.clone(),
                budget: budget::PushBudget::new(settings.ws.player_pushes_per_sec),
                max_conns_per_addr: settings.max_conns_per_addr,
                shutdown,
                sessions_changed: Notify::new(),
                next_id: AtomicU64::new(1),
                instance: uuid::Uuid::new_v4().simple().to_string(),
            }),
        };
        // A weak handle: the store lives in the hub (a strong one would make a cycle).
        hub.inner
            .store
            .on_commit(Box::new(commit::Commits(Arc::downgrade(&hub.inner))));
        // The broker feeds the hub from its own tasks until shutdown starts.
        hub.inner
            .broker
            .start(hub.inner.clone(), hub.inner.shutdown.subscribe());
        hub
    }

    /// Open sessions on this instance.
    pub fn sessions(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Boards with a view open on this instance (each has a cell and a worker).
    pub fn boards_watched(&self) -> usize {
        self.inner.boards.len()
    }

    /// What this instance's views of `board` have done so far (all zero when none is open:
    /// the counts go with the board's last view).
    pub fn view_counts(&self, board: &Id) -> ViewCounts {
        self.inner
            .cell(board)
            .map(|c| c.lock().counts)
            .unwrap_or_default()
    }

    /// Open views on this instance by kind: top, me, around (for `/metrics`).
    pub fn views_by_kind(&self) -> [(&'static str, i64); 3] {
        let mut n = [0i64; 3];
        let cells = self.inner.cells();
        for cell in cells {
            for (_, kind) in cell.lock().subs.keys() {
                n[match kind {
                    ViewKind::Top => 0,
                    ViewKind::Me => 1,
                    ViewKind::Around => 2,
                }] += 1;
            }
        }
        [("top", n[0]), ("me", n[1]), ("around", n[2])]
    }

    /// The longest players' (`me`, `around`) coalescing window among the watched boards, and why
    /// it is stretched (`none`, `sessions_behind`, `flush_budget`, `push_budget`, `with_acks`),
    /// for `/metrics`.
    pub fn views_window(&self) -> (Duration, &'static str) {
        let cells = self.inner.cells();
        cells
            .iter()
            .map(|c| c.window())
            .max_by_key(|(w, _)| *w)
            .map(|(w, c)| (w, c.map_or("none", window::Stretch::label)))
            .unwrap_or((Duration::ZERO, "none"))
    }

    /// The longest hold of a `me` view after an update that went with its ack among the watched
    /// boards (`window.rs`'s `next_hold`), for `/metrics`.
    pub fn views_hold(&self) -> Duration {
        let cells = self.inner.cells();
        cells.iter().map(|c| c.hold()).max().unwrap_or_default()
    }

    /// Starts the graceful shutdown of every session: each finishes its in-flight submissions,
    /// sends their answers and closes with 1001.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Resolves when [`Hub::shutdown`] was called.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.inner.shutdown.subscribe()
    }

    /// Waits (at most `within`) until every session has ended.
    pub async fn drained(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let changed = self.inner.sessions_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.sessions() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.sessions() == 0;
            }
        }
    }
}

impl Inner {
    /// A watched board's cell (its shard's lock is released on return).
    fn cell(&self, board: &Id) -> Option<Arc<BoardCell>> {
        self.boards.lock(board).get(board).cloned()
    }

    /// Every watched board's cell.
    fn cells(&self) -> Vec<Arc<BoardCell>> {
        let mut cells = Vec::new();
        self.boards.each(|_, c| cells.push(c.clone()));
        cells
    }

    /// The wanted boards or players changed: the broker (un)subscribes to match.
    fn wake_subscribers(&self) {
        self.broker.wanted_changed();
    }
}
