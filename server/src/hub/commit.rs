//! A batch this instance committed: the `me` updates of its submitters are queued before the
//! batch's acks are handed out, so that each connection's writer takes its ack and its new rank
//! together — one write and one wake-up of the client instead of two. At 1 000 players watching
//! `me`, the submitters' own updates were about half of every message the server sent.
//!
//! The update is worked out from the batch's event alone ([`movers_after`]): a mover's last move
//! gives its score and rank, and the later moves of the event shift that rank. That is exact on
//! an ordinal board, so it is done only there, and only where it is allowed:
//! - the view's last update was offered at least one window (`coalesce_ms`) ago and its
//!   connection's writer has taken it: still at most one message per view per window, and a
//!   session that is behind is left to the flush (`worker.rs`). The flush's next update of the
//!   view then counts as the ack's ([`Sub::ack_owed`](super::board::Sub::ack_owed)): the hold
//!   after an ack follows it;
//! - the update is newer than the view's last message (`seq`), and nothing waits for a full
//!   recompute or a resync.
//!
//! A player's shard of the registry is taken for one map lookup per submitter, then the board's
//! own lock (the event is parsed outside both).
//!
//! Everything else stays as it was: the event still reaches the hub by pub/sub and marks the
//! board dirty, and the next flush derives every standing (finding this one already sent, by its
//! hash). Its `previous_rank` is the rank just before the player's (first) submission in the
//! batch, as in the ack.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use scorecast_shared::protocol::ViewKind;
use scorecast_shared::Id;

use super::derive::{movers_after, MeState, Move};
use super::events::{Change, Event};
use super::outbox::Outbox;
use super::render::render_me;
use super::{Inner, SessionId};
use crate::metrics;
use crate::store::{OnCommit, Wake};

/// The store's commit hook (set by `Hub::start`; weak: the store lives in the hub).
pub(super) struct Commits(pub Weak<Inner>);

impl OnCommit for Commits {
    /// A board watched here that ranks ordinally and keeps `me` standings (a `me` view was
    /// flushed since it was watched, or since its season began).
    fn wants(&self, board: &Id) -> bool {
        self.0.upgrade().is_some_and(|inner| {
            inner.cell(board).is_some_and(|c| {
                let b = c.lock();
                b.ordinal == Some(true) && !b.me.is_empty()
            })
        })
    }

    fn committed(&self, board: &Id, event: &[u8]) -> Option<Wake> {
        self.0.upgrade()?.committed(board, event)
    }
}

impl Inner {
    /// A submission batch of this instance committed and published `event` on `board`: queues
    /// its submitters' `me` updates without waking their sessions yet. Returns the wake-up to
    /// run after the batch's results were handed out.
    fn committed(&self, board: &Id, event: &[u8]) -> Option<Wake> {
        let ev: Event = serde_json::from_slice(event).ok()?;
        if ev.rollover {
            return None;
        }
        let moves: Vec<Move> = ev.changes.iter().filter_map(Change::to_move).collect();
        let moved = movers_after(&moves);
        let window = Duration::from_millis(self.ws.coalesce_ms);
        let mut woken: Vec<Arc<Outbox>> = Vec::new();
        // The movers' local sessions, from the registry's player shards (each released at
        // once): the rest is the board's alone. One flat list of (index in `moved`, session),
        // in the order of `moved`.
        let cell = self.cell(board)?;
        let mut sessions: Vec<(usize, SessionId)> = Vec::with_capacity(moved.len());
        for (i, m) in moved.iter().enumerate() {
            if let Some(s) = self.players.lock(m.player).get(m.player) {
                sessions.extend(s.iter().map(|sid| (i, *sid)));
            }
        }
        let mut guard = cell.lock();
        let b = &mut *guard;
        if b.gone || b.ordinal != Some(true) || b.dirty.full || b.dirty.resync {
            return None;
        }
        let now = Instant::now();
        for group in sessions.chunk_by(|a, b| a.0 == b.0) {
            let m = &moved[group[0].0];
            let standing = MeState {
                score: m.score,
                rank: m.rank,
                previous_rank: m.previous_rank,
                at: Some(ev.seq),
            };
            let mut built = None;
            for (_, sid) in group {
                let Some(sub) = b.subs.get_mut(&(*sid, ViewKind::Me)) else {
                    continue;
                };
                if !sub.ready || ev.seq <= sub.last_seq {
                    continue;
                }
                if sub.sent_within(now, window) {
                    // Too soon after the view's last message: the next flush brings the update,
                    // and it counts as this ack's (the hold follows it). Otherwise a player whose
                    // view a flush had just updated would get an update at every flush until an
                    // ack found the view a window past its last message.
                    sub.ack_owed = true;
                    continue;
                }
                let msg = built.get_or_insert_with(|| {
                    render_me(board, m.player, &standing, &ev.season, ev.seq, false)
                });
                if !sub.is_news(msg.hash, msg.seq) {
                    continue;
                }
                if !sub.outbox.put_view(board, ViewKind::Me, &msg.text) {
                    sub.ack_owed = true;
                    continue;
                }
                sub.sent(msg.hash, msg.seq, now, true);
                metrics::PUSHES.inc();
                metrics::WITH_ACK.inc();
                b.counts.with_ack += 1;
                woken.push(sub.outbox.clone());
            }
        }
        drop(guard);
        if woken.is_empty() {
            return None;
        }
        Some(Box::new(move || {
            for outbox in woken {
                outbox.wake_unless_answering();
            }
        }))
    }
}
