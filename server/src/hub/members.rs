//! Who is connected: admission per client address, each session's membership ([`Member`]) and
//! the player it belongs to. Dropping a member is the one place a session leaves the hub.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use scorecast_shared::protocol::ViewKind;
use scorecast_shared::{Id, View};

use super::board::BoardCell;
use super::outbox::{Outbox, ViewKey};
use super::{Hub, Inner, SessionEntry, SessionId};
use crate::error::{AppError, AppResult, RateInfo};
use crate::metrics;

/// A connected session's membership in the hub. Dropping it removes the session and its views
/// (and its address slot, unless the slot was taken to live as long as the TCP connection).
pub struct Member {
    hub: Hub,
    id: SessionId,
    slot: Option<AddrSlot>,
    outbox: Arc<Outbox>,
}

/// One connection counted against its client address's cap; dropping it frees the place.
pub struct AddrSlot {
    hub: Hub,
    ip: IpAddr,
}

impl Drop for AddrSlot {
    fn drop(&mut self) {
        let mut conns = self.hub.inner.conns.lock(&self.ip);
        if let Some(n) = conns.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                conns.remove(&self.ip);
            }
        }
    }
}

impl Hub {
    /// Admits a new connection from `addr` (refused past `max_conns_per_addr`).
    pub fn admit(&self, addr: Option<IpAddr>) -> AppResult<Member> {
        let inner = &self.inner;
        if let Some(ip) = addr {
            let mut conns = inner.conns.lock(&ip);
            let n = conns.entry(ip).or_default();
            if inner.max_conns_per_addr > 0 && *n >= inner.max_conns_per_addr {
                // No time is known when a place frees (when one of the address's connections
                // ends): the headers say to try again in a second.
                let max = u64::from(inner.max_conns_per_addr);
                return Err(AppError::rate_limited(
                    format!("at most {max} WebSocket connections per client address"),
                    RateInfo {
                        allowed: false,
                        limit: max,
                        remaining: 0,
                        retry_after_ms: 1000,
                        reset_ms: 1000,
                    },
                ));
            }
            *n += 1;
        }
        // Made only once counted (and so dropped only after the address's shard was released).
        let slot = addr.map(|ip| AddrSlot {
            hub: self.clone(),
            ip,
        });
        let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
        let outbox = Arc::new(Outbox::new(inner.ws.outbound_queue));
        inner.sessions.lock(&id).insert(
            id,
            SessionEntry {
                outbox: outbox.clone(),
                player: None,
                views: Vec::new(),
            },
        );
        metrics::WS_CONNECTIONS.inc();
        Ok(Member {
            hub: self.clone(),
            id,
            slot,
            outbox,
        })
    }
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

    /// The connection's place under the per-address cap, for the caller to keep until the TCP
    /// connection is really gone (a session can end long before its socket does).
    pub fn take_slot(&mut self) -> Option<AddrSlot> {
        self.slot.take()
    }

    /// Records the session's player (after a successful `hello`), for `notify`.
    pub fn set_player(&self, player: &Id) {
        let inner = &self.hub.inner;
        let mut sessions = inner.sessions.lock(&self.id);
        let Some(s) = sessions.get_mut(&self.id) else {
            return;
        };
        if s.player.as_ref() == Some(player) {
            return;
        }
        s.player = Some(player.clone());
        let mut players = inner.players.lock(player);
        let set = players.entry(player.clone()).or_default();
        let first = set.is_empty();
        set.insert(self.id);
        if first {
            inner.wake_subscribers();
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
        let (inner, id, outbox) = (self.hub.inner.clone(), self.id, self.outbox.clone());
        async move { super::subscribe::subscribe(&inner, id, &outbox, &board, view, player).await }
    }

    /// Stops a view (no-op if it was not subscribed). On a bucketed board the view is kept in
    /// its bucket's cell ([`Id::cell`]): whichever cell of `board` holds it.
    pub fn unsubscribe(&self, board: &Id, kind: ViewKind) {
        self.hub
            .inner
            .unsubscribe_where(self.id, &self.outbox, kind, |cell| {
                cell.board_part() == board.as_str()
            });
    }
}

impl Inner {
    /// Stops the session's views of `kind` held in the cells `which` picks.
    pub(super) fn unsubscribe_where(
        &self,
        session: SessionId,
        outbox: &Outbox,
        kind: ViewKind,
        which: impl Fn(&Id) -> bool,
    ) {
        let mut sessions = self.sessions.lock(&session);
        let mut slots = Vec::new();
        if let Some(s) = sessions.get_mut(&session) {
            s.views.retain(|v| {
                let hit = v.1 == kind && which(&v.0);
                if hit {
                    slots.push(v.clone());
                }
                !hit
            });
        }
        for slot in &slots {
            self.remove_view(session, slot);
        }
        drop(sessions);
        for slot in &slots {
            outbox.drop_view(slot);
        }
    }

    /// Removes `session`'s view `slot` from its board, and the board if nobody watches it any
    /// more (under the session's shard: the lock order).
    fn remove_view(&self, session: SessionId, slot: &ViewKey) {
        let mut boards = self.boards.lock(&slot.0);
        if let Some(cell) = boards.get(&slot.0).cloned() {
            cell.lock().remove_sub(&(session, slot.1));
            self.forget_board_if_unwatched(&mut boards, &slot.0);
        }
    }
}

impl Drop for Member {
    /// Removes the session and its views: O(its views), whatever else the hub holds. The
    /// connection's output ends with it: after the close frame the session asked for, or at once
    /// (a session that ended without one, or did not end normally).
    fn drop(&mut self) {
        self.outbox.end();
        let inner = &self.hub.inner;
        let mut sessions = inner.sessions.lock(&self.id);
        if let Some(entry) = sessions.remove(&self.id) {
            if let Some(player) = entry.player {
                let mut players = inner.players.lock(&player);
                if let Some(set) = players.get_mut(&player) {
                    set.remove(&self.id);
                    if set.is_empty() {
                        players.remove(&player);
                        inner.wake_subscribers();
                    }
                }
            }
            for slot in &entry.views {
                inner.remove_view(self.id, slot);
            }
        }
        drop(sessions);
        metrics::WS_CONNECTIONS.dec();
        inner.sessions_changed.notify_waiters();
    }
}

impl Inner {
    /// Drops a board nobody watches any more (its worker and its channel go with it).
    pub(super) fn forget_board_if_unwatched(
        &self,
        boards: &mut foldhash::HashMap<Id, Arc<BoardCell>>,
        board: &Id,
    ) {
        let Some(cell) = boards.get(board) else {
            return;
        };
        let mut b = cell.lock();
        if !b.subs.is_empty() {
            return;
        }
        b.gone = true;
        drop(b);
        cell.wake.notify_one();
        boards.remove(board);
        self.wake_subscribers();
    }
}
