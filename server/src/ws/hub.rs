//! The per-instance hub: who is connected, who watches what, and the Redis pub/sub feed.
//!
//! One hub per server instance, behind a cloneable [`Hub`] handle. It owns
//!
//! - the sessions (their bounded [`Outbox`]es, their player once authenticated),
//! - the subscriptions, grouped by board,
//! - a *dedicated* Redis pub/sub connection (never the shared multiplexed one), subscribed only to
//!   `ev:{<board>}` of boards that have local viewers and to `notify:{<player>}` of players with
//!   a local session.
//!
//! Each watched board has a worker task. An event marks the board dirty (which ranks moved, whose
//! score changed); the worker wakes, waits out the coalescing window (at most one flush per
//! `coalesce_ms`, so at most one message per view per window, always the latest state), reads
//! each *distinct* view once — one `top` read of the largest limit serves every `top`
//! subscriber, one read per player serves their `me` — serialises each message once and offers
//! the same bytes to every subscriber's outbox. Offering never awaits a socket.
//!
//! Ordering: a subscription's messages carry strictly increasing `seq` (anything at or below the
//! last one sent is dropped). When the pub/sub connection drops and returns, or a read shows
//! `seq` going backwards (Redis lost its data), every open view gets a fresh snapshot with
//! `"resync": true` and its ordering restarts from there.
//!
//! Locks: one std `Mutex` over the hub state, held only for map updates and never across an
//! `.await` (mini-redis's `db.rs` reasoning): all Redis reads happen outside it.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytestring::ByteString;
use futures_util::future::try_join_all;
use futures_util::StreamExt;
use scorecast_shared::protocol::ViewKind;
use scorecast_shared::{ErrorCode, Id, ServerMsg, View};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use super::outbox::Outbox;
use crate::config::{Settings, WsSettings};
use crate::error::{AppError, AppResult};
use crate::keys;
use crate::metrics;
use crate::store::{Page, Read, Store};

/// How long a new subscription waits for Redis to confirm its board's channel before taking its
/// snapshot (a snapshot taken earlier could miss a change published in between). When pub/sub is
/// down the wait gives up and the resync on reconnection covers the gap.
const SUBSCRIBE_CONFIRM_WAIT: Duration = Duration::from_secs(2);
/// Reconnection backoff of the pub/sub connection.
const PUBSUB_BACKOFF_MIN: Duration = Duration::from_millis(50);
const PUBSUB_BACKOFF_MAX: Duration = Duration::from_secs(2);
const PUBSUB_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A pub/sub connection that stops answering pings (a partition, not a closed socket) is
/// replaced.
const PUBSUB_PING_INTERVAL: Duration = Duration::from_secs(5);
const PUBSUB_PING_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a (UN)SUBSCRIBE may take before the connection is considered broken.
const PUBSUB_COMMAND_TIMEOUT: Duration = Duration::from_secs(3);
/// A flush whose reads failed (Redis down) is retried after this.
const FLUSH_RETRY: Duration = Duration::from_millis(250);

pub type SessionId = u64;

/// A cloneable handle to the instance's hub.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    store: Store,
    client: redis::Client,
    ws: WsSettings,
    max_conns_per_addr: u32,
    /// Wakes the pub/sub task when the wanted channels changed.
    channels_changed: Notify,
    /// Wakes subscriptions waiting for their channel to be confirmed.
    confirmed_changed: Notify,
    shutdown: watch::Sender<bool>,
    /// Wakes whoever waits for every session to end (graceful shutdown).
    sessions_changed: Notify,
    next_id: AtomicU64,
    /// This instance's id in `notify` messages.
    instance: String,
}

#[derive(Default)]
struct State {
    sessions: HashMap<SessionId, SessionEntry>,
    boards: HashMap<Id, Board>,
    /// Local sessions of each authenticated player (for `notify`).
    players: HashMap<Id, HashSet<SessionId>>,
    /// Channels Redis confirmed on the current pub/sub connection.
    confirmed: HashSet<String>,
    conns: HashMap<IpAddr, u32>,
    next_gen: u64,
}

struct SessionEntry {
    outbox: Arc<Outbox>,
    player: Option<Id>,
}

/// One watched board.
struct Board {
    /// Distinguishes this board entry from a later one with the same id (the worker of a
    /// removed entry must not adopt its successor).
    epoch: u64,
    subs: HashMap<(SessionId, ViewKind), Sub>,
    dirty: Dirty,
    wake: Arc<Notify>,
    /// The last event's seq: pub/sub delivers in publish order, so a smaller one means Redis
    /// lost its data.
    last_event_seq: u64,
    /// The highest seq known committed; a later read below it means Redis lost its data.
    high_seq: u64,
    /// Each player's last known standing, for `me` (and its `previous_rank`).
    me: HashMap<Id, MeState>,
    /// The season the views last showed.
    season: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct MeState {
    score: Option<i64>,
    rank: Option<u64>,
    previous_rank: Option<u64>,
}

struct Sub {
    view: View,
    player: Option<Id>,
    /// Bumped when the subscription is replaced, so a flush planned for the old one is dropped.
    gen: u64,
    outbox: Arc<Outbox>,
    /// False until the subscribe's own snapshot went out: flushes skip it until then.
    ready: bool,
    /// Recompute at the next flush whatever the events say (snapshot older than known events).
    force: bool,
    last_seq: u64,
    last_hash: Option<u64>,
    /// `around`: the ranks it shows, to tell whether a change can reach it.
    window: Option<(u64, u64)>,
}

/// What changed on a board since the last flush.
#[derive(Default)]
struct Dirty {
    any: bool,
    /// Recompute every view (rollover, new season, unreadable event).
    full: bool,
    /// Send every view as a fresh snapshot with `resync: true`.
    resync: bool,
    /// Players whose own score changed.
    players: HashSet<Id>,
    /// Rank ranges whose occupants may have moved (inclusive; `u64::MAX` = to the end).
    ranges: Vec<(u64, u64)>,
    /// Someone joined or left: `top.total` changed.
    total_changed: bool,
}

/// A change event as `lua/lib.lua`'s `publish_change` writes it: one change at the top level
/// (`player`, `rank`, `previous_rank`), a group-committed batch in `changes`, or a rollover.
#[derive(Deserialize)]
struct Event {
    season: String,
    seq: u64,
    #[serde(flatten)]
    single: Change,
    #[serde(default)]
    changes: Vec<Change>,
    #[serde(default)]
    rollover: bool,
}

/// One player's move (ranks are 1-based; `None` = not on the board).
#[derive(Deserialize, Default)]
struct Change {
    #[serde(default)]
    player: Option<String>,
    #[serde(default)]
    rank: Option<u64>,
    #[serde(default)]
    previous_rank: Option<u64>,
}

/// What `notify` publishes on `notify:{<player>}`.
#[derive(Deserialize, serde::Serialize)]
struct NotifyEvent {
    kind: String,
    payload: Value,
    /// The publishing instance, which has delivered locally already and skips its own echo.
    #[serde(default)]
    from: String,
}

/// One flush: the reads to do and the subscriptions they serve.
struct Plan {
    epoch: u64,
    resync: bool,
    high_seq: u64,
    top_limit: u64,
    players: Vec<Id>,
    arounds: Vec<(Id, u64)>,
    targets: Vec<((SessionId, ViewKind), u64)>,
}

struct Results {
    top: Option<Page>,
    me: HashMap<Id, Page>,
    around: HashMap<(Id, u64), Page>,
}

enum Planned {
    Gone,
    Nothing,
    Flush(Plan),
}

fn hash_of(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// Sorts and merges rank ranges, so membership is a binary search.
fn merge_ranges(mut r: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    r.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(r.len());
    for (lo, hi) in r {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Whether any merged range meets `[a, b]`.
fn meets(ranges: &[(u64, u64)], a: u64, b: u64) -> bool {
    // The first range that ends at or after `a`; it meets [a, b] if it starts by `b`.
    let i = ranges.partition_point(|r| r.1 < a);
    ranges.get(i).is_some_and(|r| r.0 <= b)
}

/// A view's message and the hash of its content (everything but `seq` and `resync`), so an
/// unchanged view is not re-sent.
struct Built {
    hash: u64,
    text: ByteString,
    seq: u64,
    window: Option<(u64, u64)>,
}

fn build_top(board: &Id, page: &Page, limit: u64, resync: bool) -> Built {
    let n = (limit as usize).min(page.entries.len());
    let entries = page.entries[..n].to_vec();
    let content = ServerMsg::Top {
        board: String::new(),
        season: page.season.clone(),
        total: page.total,
        entries,
        seq: 0,
        resync: false,
    };
    let hash = hash_of(&content.to_json());
    let ServerMsg::Top {
        season,
        total,
        entries,
        ..
    } = content
    else {
        unreachable!("built just above")
    };
    let msg = ServerMsg::Top {
        board: board.to_string(),
        season,
        total,
        entries,
        seq: page.seq,
        resync,
    };
    Built {
        hash,
        text: msg.to_json().into(),
        seq: page.seq,
        window: None,
    }
}

fn build_me(
    board: &Id,
    player: &Id,
    page: &Page,
    me: &mut HashMap<Id, MeState>,
    resync: bool,
) -> Built {
    let e = page.entries.first();
    let (score, rank) = (e.map(|e| e.score), e.map(|e| e.rank));
    let st = me.entry(player.clone()).or_default();
    if (st.score, st.rank) != (score, rank) {
        *st = MeState {
            score,
            rank,
            previous_rank: st.rank,
        };
    }
    let hash = hash_of(&format!("{}|{score:?}|{rank:?}", page.season));
    let msg = ServerMsg::Rank {
        board: board.to_string(),
        season: page.season.clone(),
        player: player.to_string(),
        score,
        rank,
        previous_rank: st.previous_rank,
        seq: page.seq,
        resync,
    };
    Built {
        hash,
        text: msg.to_json().into(),
        seq: page.seq,
        window: None,
    }
}

fn build_around(board: &Id, page: &Page, resync: bool) -> Built {
    let window = match (page.entries.first(), page.entries.last()) {
        (Some(a), Some(b)) => Some((a.rank, b.rank)),
        _ => None,
    };
    let mut msg = ServerMsg::Around {
        board: String::new(),
        season: page.season.clone(),
        entries: page.entries.clone(),
        seq: 0,
        resync: false,
    };
    let hash = hash_of(&msg.to_json());
    if let ServerMsg::Around {
        board: b,
        seq,
        resync: r,
        ..
    } = &mut msg
    {
        *b = board.to_string();
        *seq = page.seq;
        *r = resync;
    }
    Built {
        hash,
        text: msg.to_json().into(),
        seq: page.seq,
        window,
    }
}

/// Reads what one view shows.
async fn read_view(store: &Store, board: &Id, view: View, player: Option<&Id>) -> AppResult<Page> {
    let need_player = || {
        player.ok_or_else(|| {
            AppError::new(
                ErrorCode::Unauthorized,
                "this view needs a player: send hello first",
            )
        })
    };
    match view {
        View::Top { limit } => {
            store
                .read(
                    board,
                    None,
                    Read::Top {
                        offset: 0,
                        limit: limit.into(),
                    },
                )
                .await
        }
        View::Me => store.read(board, None, Read::Player(need_player()?)).await,
        View::Around { radius } => {
            store
                .read(
                    board,
                    None,
                    Read::Around {
                        player: need_player()?,
                        radius: radius.into(),
                    },
                )
                .await
        }
    }
}

/// A connected session's membership in the hub. Dropping it removes the session, its views and
/// its connection slot.
pub struct Member {
    hub: Hub,
    id: SessionId,
    addr: Option<IpAddr>,
    outbox: Arc<Outbox>,
}

impl Hub {
    /// Creates the hub and starts its pub/sub task (on the current Tokio runtime).
    pub fn start(redis_url: &str, store: Store, settings: &Settings) -> anyhow::Result<Hub> {
        let client = redis::Client::open(redis_url)?;
        let (shutdown, _) = watch::channel(false);
        let hub = Hub {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                store,
                client,
                ws: settings.ws.clone(),
                max_conns_per_addr: settings.max_conns_per_addr,
                channels_changed: Notify::new(),
                confirmed_changed: Notify::new(),
                shutdown,
                sessions_changed: Notify::new(),
                next_id: AtomicU64::new(1),
                instance: uuid::Uuid::new_v4().simple().to_string(),
            }),
        };
        tokio::spawn(pubsub_task(hub.inner.clone()));
        Ok(hub)
    }

    pub fn settings(&self) -> &WsSettings {
        &self.inner.ws
    }

    /// Admits a new connection from `addr` (refused past `max_conns_per_addr`).
    pub fn admit(&self, addr: Option<IpAddr>) -> AppResult<Member> {
        let mut st = self.inner.lock();
        if let Some(ip) = addr {
            let n = st.conns.entry(ip).or_default();
            if self.inner.max_conns_per_addr > 0 && *n >= self.inner.max_conns_per_addr {
                return Err(AppError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "at most {} WebSocket connections per client address",
                        self.inner.max_conns_per_addr
                    ),
                ));
            }
            *n += 1;
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let outbox = Arc::new(Outbox::new(self.inner.ws.outbound_queue));
        st.sessions.insert(
            id,
            SessionEntry {
                outbox: outbox.clone(),
                player: None,
            },
        );
        drop(st);
        metrics::WS_CONNECTIONS.inc();
        Ok(Member {
            hub: self.clone(),
            id,
            addr,
            outbox,
        })
    }

    /// Open sessions on this instance.
    pub fn sessions(&self) -> usize {
        self.inner.lock().sessions.len()
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

    /// Pushes `{"type":"notify","kind","payload"}` to every session of `player` on **this**
    /// instance; returns how many sessions took it (a session whose queue is full is skipped).
    pub fn notify_local(&self, player: &Id, kind: &str, payload: Value) -> usize {
        let text: ByteString = ServerMsg::Notify {
            kind: kind.to_owned(),
            payload,
        }
        .to_json()
        .into();
        self.inner.deliver(player, text)
    }

    /// Pushes a `notify` message to `player` on **every** instance sharing this Redis: delivered
    /// here at once, and published on `notify:{<player>}`, which each instance subscribes to
    /// while the player has a session there (the publisher skips its own echo). Returns the
    /// sessions reached here and how many other instances received it; fails with
    /// `unavailable` when Redis is unreachable (after the local delivery).
    pub async fn notify(&self, player: &Id, kind: &str, payload: Value) -> AppResult<(usize, u64)> {
        let local = self.notify_local(player, kind, payload.clone());
        let remote = self.inner.publish_notify(player, kind, payload).await?;
        Ok((local, remote))
    }
}

/// The job workers' `notify` jobs (DESIGN §7) go through the hub: local sessions at once, other
/// instances through Redis pub/sub (in the background: the trait is synchronous).
impl crate::jobs::Notifier for Hub {
    fn notify(&self, player: &Id, kind: &str, payload: &Value) -> usize {
        let local = self.notify_local(player, kind, payload.clone());
        let (inner, player, kind, payload) = (
            self.inner.clone(),
            player.clone(),
            kind.to_owned(),
            payload.clone(),
        );
        tokio::spawn(async move {
            if let Err(e) = inner.publish_notify(&player, &kind, payload).await {
                tracing::warn!(%player, error = %e, "notify could not reach other instances");
            }
        });
        local
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
        let mut c = self.store.conn();
        let n: u64 = redis::cmd("PUBLISH")
            .arg(keys::notify(player))
            .arg(body)
            .query_async(&mut c)
            .await?;
        // Our own subscription (if the player is connected here) counts as one receiver.
        let here = u64::from(self.lock().players.contains_key(player));
        Ok(n.saturating_sub(here))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is plain maps updated without awaits; after a panic elsewhere it is still
        // usable, and refusing every later session would be worse.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deliver(&self, player: &Id, text: ByteString) -> usize {
        let st = self.lock();
        let Some(ids) = st.players.get(player) else {
            return 0;
        };
        ids.iter()
            .filter_map(|id| st.sessions.get(id))
            .filter(|s| s.outbox.offer(actix_ws::Message::Text(text.clone())))
            .count()
    }

    /// The channels this instance needs.
    fn wanted_channels(&self) -> HashSet<String> {
        let st = self.lock();
        st.boards
            .keys()
            .map(keys::events)
            .chain(st.players.keys().map(keys::notify))
            .collect()
    }

    /// Waits until Redis confirmed `channel` on the pub/sub connection (or `within` passed).
    async fn wait_confirmed(&self, channel: &str, within: Duration) {
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

    /// Every open view is re-sent as a fresh snapshot (the pub/sub connection came back, or
    /// Redis lost its data): events may have been missed, and `seq` may have restarted.
    fn resync_all(&self) {
        let mut st = self.lock();
        for b in st.boards.values_mut() {
            b.mark_resync();
        }
    }

    fn on_event(&self, board: &str, payload: &[u8]) {
        let Ok(board) = Id::parse(board) else { return };
        let ev = serde_json::from_slice::<Event>(payload);
        let mut st = self.lock();
        let Some(b) = st.boards.get_mut(&board) else {
            return;
        };
        let Ok(ev) = ev else {
            tracing::warn!(%board, "unreadable change event; recomputing the board's views");
            b.dirty.full = true;
            b.dirty.any = true;
            b.wake.notify_one();
            return;
        };
        if ev.seq < b.last_event_seq {
            tracing::warn!(%board, seq = ev.seq, last = b.last_event_seq, "seq went backwards: Redis lost its data; resyncing");
            b.mark_resync();
            b.last_event_seq = ev.seq;
            return;
        }
        b.last_event_seq = ev.seq;
        b.high_seq = b.high_seq.max(ev.seq);
        let d = &mut b.dirty;
        d.any = true;
        // A calendar board's new season starts with its first submission, without a rollover
        // event: every view's `season` changes, so everything is recomputed.
        let new_season = b.season.as_deref().is_some_and(|s| s != ev.season);
        if ev.rollover || new_season {
            d.full = true;
            b.me.clear();
        } else {
            let mut known = 0;
            for c in std::iter::once(&ev.single).chain(&ev.changes) {
                let Some(p) = c.player.as_deref().and_then(|p| Id::parse(p).ok()) else {
                    continue;
                };
                // Ranks between the old and the new place moved by one; `None` is past the end
                // (joined, or removed). Within a batch, the first change that moves a player
                // starts from the rank the hub knows, so the union of ranges is enough.
                let (new, old) = (
                    c.rank.unwrap_or(u64::MAX),
                    c.previous_rank.unwrap_or(u64::MAX),
                );
                d.ranges.push((new.min(old), new.max(old)));
                d.total_changed |= c.rank.is_none() || c.previous_rank.is_none();
                d.players.insert(p);
                known += 1;
            }
            // An event that names nobody: recompute everything rather than guess.
            d.full |= known == 0;
        }
        b.wake.notify_one();
    }

    fn on_notify(&self, player: &str, payload: &[u8]) {
        let Ok(player) = Id::parse(player) else {
            return;
        };
        match serde_json::from_slice::<NotifyEvent>(payload) {
            Ok(n) if n.from == self.instance => {}
            Ok(n) => {
                let text: ByteString = ServerMsg::Notify {
                    kind: n.kind,
                    payload: n.payload,
                }
                .to_json()
                .into();
                self.deliver(&player, text);
            }
            Err(e) => tracing::warn!(%player, error = %e, "unreadable notify message"),
        }
    }

    /// Takes a board's dirty state and decides which views to recompute.
    fn plan(&self, board: &Id, epoch: u64) -> Planned {
        let mut st = self.lock();
        let Some(b) = st.boards.get_mut(board).filter(|b| b.epoch == epoch) else {
            return Planned::Gone;
        };
        if !b.dirty.any {
            return Planned::Nothing;
        }
        let d = std::mem::take(&mut b.dirty);
        let ranges = merge_ranges(d.ranges);
        let in_ranges = |r: u64| meets(&ranges, r, r);
        let mut plan = Plan {
            epoch,
            resync: d.resync,
            high_seq: b.high_seq,
            top_limit: 0,
            players: Vec::new(),
            arounds: Vec::new(),
            targets: Vec::new(),
        };
        let mut players = HashSet::new();
        let mut arounds = HashSet::new();
        for (key, sub) in b.subs.iter_mut() {
            if !sub.ready {
                continue;
            }
            let force = std::mem::take(&mut sub.force) || d.full || d.resync;
            let mine = sub.player.as_ref().is_some_and(|p| d.players.contains(p));
            let affected = force
                || match sub.view {
                    View::Top { limit } => d.total_changed || meets(&ranges, 1, limit.into()),
                    View::Me => {
                        mine || sub
                            .player
                            .as_ref()
                            .and_then(|p| b.me.get(p))
                            .and_then(|m| m.rank)
                            .is_some_and(in_ranges)
                    }
                    // One past the window: a newcomer right below it can shift a window that
                    // sits at the bottom of the board.
                    View::Around { .. } => {
                        mine || sub
                            .window
                            .is_some_and(|(a, z)| meets(&ranges, a, z.saturating_add(1)))
                    }
                };
            if !affected {
                continue;
            }
            match (sub.view, &sub.player) {
                (View::Top { limit }, _) => plan.top_limit = plan.top_limit.max(limit.into()),
                (View::Me, Some(p)) => {
                    players.insert(p.clone());
                }
                (View::Around { radius }, Some(p)) => {
                    arounds.insert((p.clone(), u64::from(radius)));
                }
                // Player views always have a player (checked at subscribe).
                _ => continue,
            }
            plan.targets.push((*key, sub.gen));
        }
        plan.players = players.into_iter().collect();
        plan.arounds = arounds.into_iter().collect();
        if plan.targets.is_empty() {
            return Planned::Nothing;
        }
        Planned::Flush(plan)
    }

    async fn execute(&self, board: &Id, plan: &Plan) -> AppResult<Results> {
        let store = &self.store;
        let top = async {
            if plan.top_limit == 0 {
                return Ok(None);
            }
            store
                .read(
                    board,
                    None,
                    Read::Top {
                        offset: 0,
                        limit: plan.top_limit,
                    },
                )
                .await
                .map(Some)
        };
        let me = try_join_all(plan.players.iter().map(|p| async move {
            let page = store.read(board, None, Read::Player(p)).await?;
            Ok::<_, AppError>((p.clone(), page))
        }));
        let around = try_join_all(plan.arounds.iter().map(|(p, r)| async move {
            let page = store
                .read(
                    board,
                    None,
                    Read::Around {
                        player: p,
                        radius: *r,
                    },
                )
                .await?;
            Ok::<_, AppError>(((p.clone(), *r), page))
        }));
        let (top, me, around) = futures_util::try_join!(top, me, around)?;
        Ok(Results {
            top,
            me: me.into_iter().collect(),
            around: around.into_iter().collect(),
        })
    }

    /// Offers the flush's messages to the subscriptions it was planned for.
    fn apply(&self, board: &Id, plan: Plan, res: Results) {
        let mut st = self.lock();
        let Some(b) = st.boards.get_mut(board).filter(|b| b.epoch == plan.epoch) else {
            return;
        };
        let seqs = res
            .top
            .iter()
            .chain(res.me.values())
            .chain(res.around.values())
            .map(|p| p.seq);
        let (lowest, highest) = seqs.fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        if !plan.resync && lowest < plan.high_seq {
            tracing::warn!(%board, seq = lowest, known = plan.high_seq, "seq went backwards: Redis lost its data; resyncing");
            b.mark_resync();
            return;
        }
        b.high_seq = b.high_seq.max(highest);
        if let Some(p) = res
            .top
            .iter()
            .chain(res.me.values())
            .chain(res.around.values())
            .next()
        {
            b.season = Some(p.season.clone());
        }
        let mut tops: HashMap<u64, Built> = HashMap::new();
        let mut mes: HashMap<Id, Built> = HashMap::new();
        let mut arounds: HashMap<(Id, u64), Built> = HashMap::new();
        let Board { subs, me, .. } = b;
        for (key, gen) in plan.targets {
            let Some(sub) = subs.get_mut(&key).filter(|s| s.gen == gen) else {
                continue;
            };
            let built = match (sub.view, &sub.player) {
                (View::Top { limit }, _) => {
                    let Some(page) = &res.top else { continue };
                    &*tops
                        .entry(limit.into())
                        .or_insert_with(|| build_top(board, page, limit.into(), plan.resync))
                }
                (View::Me, Some(p)) => {
                    let Some(page) = res.me.get(p) else { continue };
                    &*mes
                        .entry(p.clone())
                        .or_insert_with(|| build_me(board, p, page, me, plan.resync))
                }
                (View::Around { radius }, Some(p)) => {
                    let k = (p.clone(), u64::from(radius));
                    let Some(page) = res.around.get(&k) else {
                        continue;
                    };
                    &*arounds
                        .entry(k)
                        .or_insert_with(|| build_around(board, page, plan.resync))
                }
                _ => continue,
            };
            sub.window = built.window.or(sub.window);
            if plan.resync || (sub.last_hash != Some(built.hash) && built.seq > sub.last_seq) {
                sub.last_seq = built.seq;
                sub.last_hash = Some(built.hash);
                sub.outbox
                    .offer_view(&(board.clone(), key.1), built.text.clone());
            }
        }
    }

    /// Marks the board dirty again after a failed flush.
    fn restore(&self, board: &Id, plan: &Plan) {
        let mut st = self.lock();
        if let Some(b) = st.boards.get_mut(board).filter(|b| b.epoch == plan.epoch) {
            b.dirty.any = true;
            b.dirty.full = true;
            b.dirty.resync |= plan.resync;
        }
    }

    /// Drops a board nobody watches any more (its worker and its channel go with it).
    fn forget_board_if_unwatched(&self, st: &mut State, board: &Id) {
        if st.boards.get(board).is_some_and(|b| b.subs.is_empty()) {
            if let Some(b) = st.boards.remove(board) {
                b.wake.notify_one();
            }
            self.channels_changed.notify_one();
        }
    }
}

impl Board {
    fn mark_resync(&mut self) {
        self.last_event_seq = 0;
        self.high_seq = 0;
        self.dirty.any = true;
        self.dirty.full = true;
        self.dirty.resync = true;
        self.wake.notify_one();
    }
}

/// Flushes one board's views, at most once per coalescing window.
async fn board_worker(inner: Arc<Inner>, board: Id, epoch: u64, wake: Arc<Notify>) {
    let coalesce = Duration::from_millis(inner.ws.coalesce_ms);
    let mut last_flush: Option<Instant> = None;
    loop {
        wake.notified().await;
        if let Some(t) = last_flush {
            tokio::time::sleep_until(t + coalesce).await;
        }
        let plan = match inner.plan(&board, epoch) {
            Planned::Gone => return,
            Planned::Nothing => continue,
            Planned::Flush(p) => p,
        };
        last_flush = Some(Instant::now());
        match inner.execute(&board, &plan).await {
            Ok(res) => inner.apply(&board, plan, res),
            Err(e) => {
                tracing::debug!(%board, error = %e, "view flush failed; retrying");
                inner.restore(&board, &plan);
                tokio::time::sleep(FLUSH_RETRY).await;
                wake.notify_one();
            }
        }
    }
}

/// Keeps the dedicated pub/sub connection up and subscribed to exactly the wanted channels,
/// and turns its messages into board and notify events.
async fn pubsub_task(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.subscribe();
    let mut backoff = PUBSUB_BACKOFF_MIN;
    let mut connected_before = false;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let ps = match tokio::time::timeout(PUBSUB_CONNECT_TIMEOUT, inner.client.get_async_pubsub())
            .await
        {
            Ok(Ok(ps)) => ps,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "pub/sub connection failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(PUBSUB_BACKOFF_MAX);
                continue;
            }
            Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(PUBSUB_BACKOFF_MAX);
                continue;
            }
        };
        backoff = PUBSUB_BACKOFF_MIN;
        let (mut sink, mut stream) = ps.split();
        let mut subscribed = HashSet::new();
        if sync_channels(&inner, &mut sink, &mut subscribed)
            .await
            .is_ok()
        {
            if connected_before {
                tracing::info!("pub/sub connection is back; resyncing every view");
                inner.resync_all();
            }
            let mut ping = tokio::time::interval(PUBSUB_PING_INTERVAL);
            ping.tick().await;
            loop {
                tokio::select! {
                    msg = stream.next() => {
                        let Some(msg) = msg else { break };
                        let channel = msg.get_channel_name();
                        if let Some(board) = channel.strip_prefix("ev:{").and_then(|c| c.strip_suffix('}')) {
                            inner.on_event(board, msg.get_payload_bytes());
                        } else if let Some(player) = channel.strip_prefix("notify:{").and_then(|c| c.strip_suffix('}')) {
                            inner.on_notify(player, msg.get_payload_bytes());
                        }
                    }
                    _ = inner.channels_changed.notified() => {
                        if sync_channels(&inner, &mut sink, &mut subscribed).await.is_err() {
                            break;
                        }
                    }
                    _ = ping.tick() => {
                        let pong = tokio::time::timeout(PUBSUB_PING_TIMEOUT, sink.ping::<redis::Value>()).await;
                        if !matches!(pong, Ok(Ok(_))) {
                            break;
                        }
                    }
                    _ = shutdown.changed() => return,
                }
            }
        }
        inner.lock().confirmed.clear();
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
        match tokio::time::timeout(PUBSUB_COMMAND_TIMEOUT, sink.subscribe(&add)).await {
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
        match tokio::time::timeout(PUBSUB_COMMAND_TIMEOUT, sink.unsubscribe(&remove)).await {
            Ok(Ok(())) => {}
            _ => return Err(()),
        }
        for c in &remove {
            subscribed.remove(c);
        }
    }
    Ok(())
}

impl Member {
    pub fn id(&self) -> SessionId {
        self.id
    }

    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Records the session's player (after a successful `hello`), for `notify`.
    pub fn set_player(&self, player: &Id) {
        let inner = &self.hub.inner;
        let mut st = inner.lock();
        let Some(s) = st.sessions.get_mut(&self.id) else {
            return;
        };
        if s.player.as_ref() == Some(player) {
            return;
        }
        s.player = Some(player.clone());
        let set = st.players.entry(player.clone()).or_default();
        let first = set.is_empty();
        set.insert(self.id);
        if first {
            inner.channels_changed.notify_one();
        }
    }

    /// Subscribes to a view, replacing this session's view of the same kind on the board, and
    /// queues its snapshot. On error nothing stays subscribed. The future owns what it needs,
    /// so the session can go on serving its client while the snapshot is read.
    pub fn subscribe(
        &self,
        board: Id,
        view: View,
        player: Option<Id>,
    ) -> impl std::future::Future<Output = AppResult<()>> + 'static {
        let (hub, id, outbox) = (self.hub.clone(), self.id, self.outbox.clone());
        async move { subscribe_view(&hub, id, &outbox, &board, view, player.as_ref()).await }
    }

    /// Stops a view (no-op if it was not subscribed).
    pub fn unsubscribe(&self, board: &Id, kind: ViewKind) {
        let inner = &self.hub.inner;
        let mut st = inner.lock();
        if let Some(b) = st.boards.get_mut(board) {
            b.subs.remove(&(self.id, kind));
            inner.forget_board_if_unwatched(&mut st, board);
        }
        drop(st);
        self.outbox.drop_view(&(board.clone(), kind));
    }
}

/// The work of [`Member::subscribe`]: register, wait for the channel, read, queue the snapshot.
async fn subscribe_view(
    hub: &Hub,
    id: SessionId,
    outbox: &Arc<Outbox>,
    board: &Id,
    view: View,
    player: Option<&Id>,
) -> AppResult<()> {
    let inner = &hub.inner;
    let key = (id, view.kind());
    // 1. Register first, so events from now on are tracked for this view.
    let gen = {
        let mut st = inner.lock();
        st.next_gen += 1;
        let gen = st.next_gen;
        let b = match st.boards.get_mut(board) {
            Some(b) => b,
            None => {
                let wake = Arc::new(Notify::new());
                let b = Board {
                    epoch: gen,
                    subs: HashMap::new(),
                    dirty: Dirty::default(),
                    wake: wake.clone(),
                    last_event_seq: 0,
                    high_seq: 0,
                    me: HashMap::new(),
                    season: None,
                };
                tokio::spawn(board_worker(hub.inner.clone(), board.clone(), gen, wake));
                inner.channels_changed.notify_one();
                st.boards.entry(board.clone()).or_insert(b)
            }
        };
        b.subs.insert(
            key,
            Sub {
                view,
                player: player.cloned(),
                gen,
                outbox: outbox.clone(),
                ready: false,
                force: false,
                last_seq: 0,
                last_hash: None,
                window: None,
            },
        );
        gen
    };
    // 2. Wait until Redis delivers the board's events to us, then read the snapshot: a
    //    change committed after the read is then sure to arrive as an event.
    inner
        .wait_confirmed(&keys::events(board), SUBSCRIBE_CONFIRM_WAIT)
        .await;
    let page = read_view(&inner.store, board, view, player).await;
    // 3. Queue the snapshot (or undo the registration).
    let mut st = inner.lock();
    let Some(b) = st.boards.get_mut(board) else {
        return Err(AppError::new(
            ErrorCode::Unavailable,
            "the session is closing",
        ));
    };
    let page = match page {
        Ok(p) => p,
        Err(e) => {
            if b.subs.get(&key).is_some_and(|s| s.gen == gen) {
                // Still ours: undo it, and drop a snapshot of the view it replaced.
                b.subs.remove(&key);
                inner.forget_board_if_unwatched(&mut st, board);
                drop(st);
                outbox.drop_view(&(board.clone(), view.kind()));
            }
            return Err(e);
        }
    };
    let built = match (view, player) {
        (View::Me, Some(p)) => build_me(board, p, &page, &mut b.me, false),
        (View::Top { limit }, _) => build_top(board, &page, limit.into(), false),
        // `around` (read_view refused player views without a player).
        _ => build_around(board, &page, false),
    };
    b.season.get_or_insert_with(|| page.season.clone());
    let behind = b.high_seq > page.seq;
    if let Some(sub) = b.subs.get_mut(&key).filter(|s| s.gen == gen) {
        sub.ready = true;
        sub.last_seq = page.seq;
        sub.last_hash = Some(built.hash);
        sub.window = built.window;
        outbox.offer_view(&(board.clone(), view.kind()), built.text);
        if behind {
            // Events newer than the snapshot were seen before it was ready: catch up.
            sub.force = true;
            b.dirty.any = true;
            b.wake.notify_one();
        }
    }
    Ok(())
}

impl Drop for Member {
    fn drop(&mut self) {
        let inner = &self.hub.inner;
        let mut st = inner.lock();
        let entry = st.sessions.remove(&self.id);
        if let Some(player) = entry.and_then(|e| e.player) {
            if let Some(set) = st.players.get_mut(&player) {
                set.remove(&self.id);
                if set.is_empty() {
                    st.players.remove(&player);
                    inner.channels_changed.notify_one();
                }
            }
        }
        let boards: Vec<Id> = st
            .boards
            .iter_mut()
            .filter_map(|(id, b)| {
                let before = b.subs.len();
                b.subs.retain(|(sid, _), _| *sid != self.id);
                (b.subs.len() != before).then(|| id.clone())
            })
            .collect();
        for board in boards {
            inner.forget_board_if_unwatched(&mut st, &board);
        }
        if let Some(ip) = self.addr {
            if let Some(n) = st.conns.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    st.conns.remove(&ip);
                }
            }
        }
        drop(st);
        metrics::WS_CONNECTIONS.dec();
        inner.sessions_changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_single_and_batched_parse() {
        let one: Event = serde_json::from_str(
            r#"{"board":"b","season":"all","seq":4,"player":"bob","score":155,"rank":1,"previous_rank":3}"#,
        )
        .unwrap(); // unwrap: a test fixture
        assert_eq!(
            (one.seq, one.single.player.as_deref(), one.single.rank),
            (4, Some("bob"), Some(1))
        );
        let batch: Event = serde_json::from_str(
            r#"{"board":"b","season":"all","seq":5,"changes":[{"player":"a","score":1,"rank":2,"previous_rank":null}]}"#,
        )
        .unwrap(); // unwrap: a test fixture
        assert!(batch.single.player.is_none());
        assert_eq!(batch.changes[0].previous_rank, None);
        let roll: Event =
            serde_json::from_str(r#"{"board":"b","season":"s2","seq":6,"rollover":true}"#).unwrap(); // unwrap: a test fixture
        assert!(roll.rollover);
    }

    #[test]
    fn ranges_merge_and_meet() {
        let r = merge_ranges(vec![(5, 9), (1, 2), (3, 3), (20, u64::MAX)]);
        assert_eq!(
            r,
            vec![(1, 3), (5, 9), (20, u64::MAX)],
            "adjacent ranges merge"
        );
        assert!(!meets(&r, 4, 4));
        assert!(meets(&r, 9, 9));
        assert!(!meets(&r, 10, 19));
        assert!(meets(&r, 15, 25));
        assert!(meets(&r, 1_000_000, 1_000_000));
    }
}
