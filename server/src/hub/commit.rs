//! A batch this instance committed: its change event is applied to the board's views at once,
//! not when its pub/sub copy arrives, and the `me` updates of its submitters are queued before
//! the batch's acks are handed out. Each session then writes its ack and its new rank together:
//! one write and one wake-up of the client instead of two. At 1 000 players watching `me`, the
//! submitters' own updates were about half of every message the server sent.
//!
//! Only where that is exact and allowed; everywhere else the board's next flush does it:
//! - the board ranks ordinally, its season is known and nothing asks for a full recompute or a
//!   resync (the conditions under which a flush derives standings, `plan.rs`);
//! - the event directly follows the last one the hub applied (then it is applied here, and its
//!   pub/sub copy skipped when it comes: `Board::take_early`), or its pub/sub copy came first
//!   and was applied already; otherwise an earlier event is still on its way by pub/sub, and
//!   this one follows it the usual way;
//! - the view's last update was offered at least one window (`coalesce_ms`) ago, and its session
//!   has written it: still at most one message per view per window, and a session that is
//!   behind is left to the flush (`worker.rs`).
//!
//! What else the event changed (other players' `me`, `top`, `around`) stays dirty for the
//! board's next flush.

use std::sync::Arc;
use std::time::{Duration, Instant};

use scorecast_shared::protocol::ViewKind;
use scorecast_shared::Id;

use super::events::Event;
use super::outbox::Outbox;
use super::render::{render_me, Built};
use super::{Inner, State};
use crate::metrics;

/// Events applied at commit whose pub/sub copies have not come yet, at most (past this, pub/sub
/// is not delivering: the events go the usual way).
const MAX_EARLY: usize = 1024;

/// What to run once a batch's results were handed out: wake the sessions whose `me` update was
/// queued.
pub type Wake = Box<dyn FnOnce() + Send>;

impl Inner {
    /// A submission batch of this instance committed and published `event` on `board` (the
    /// store's commit hook, set by `Hub::start`): applies it, and queues its submitters' `me`
    /// updates without waking their sessions yet. Returns the wake-up to run after the batch's
    /// results were handed out.
    pub(super) fn committed(&self, board: &Id, event: &[u8]) -> Option<Wake> {
        let inner = self;
        // A board nobody watches here, or one whose standings are not derived: nothing to parse.
        if inner
            .lock()
            .boards
            .get(board)
            .is_none_or(|b| b.ordinal != Some(true))
        {
            return None;
        }
        let ev: Event = serde_json::from_slice(event).ok()?;
        let window = Duration::from_millis(inner.ws.coalesce_ms);
        let mut woken: Vec<Arc<Outbox>> = Vec::new();
        let mut st = inner.lock();
        let State {
            boards, players, ..
        } = &mut *st;
        let b = boards.get_mut(board)?;
        let derivable = b.ordinal == Some(true)
            && !b.dirty.full
            && !b.dirty.resync
            && !ev.rollover
            && b.season.as_deref() == Some(ev.season.as_str());
        if !derivable {
            return None;
        }
        if ev.seq > b.last_event_seq {
            if b.last_event_seq == 0 || ev.seq != b.last_event_seq + 1 || b.early.len() >= MAX_EARLY
            {
                // An earlier event is still on its way by pub/sub: this one follows it there.
                return None;
            }
            b.note_event(board, &ev);
            b.early.push_back(ev.seq);
        }
        // (Otherwise its pub/sub copy came first, and was applied as usual.)
        let d = b.me.derive(&b.pending, &b.pending_seqs);
        if d.inconsistent {
            tracing::warn!(%board, "a derived rank disagreed with its event; reading the standings");
        }
        metrics::ME_STANDINGS
            .with_label_values(&["derived"])
            .inc_by(d.derived);
        let now = Instant::now();
        for c in &ev.changes {
            let Some(p) = c.player.as_deref().and_then(|p| Id::parse(p).ok()) else {
                continue;
            };
            let Some(sessions) = players.get(&p) else {
                continue;
            };
            let Some((player, standing)) = b.me.get_key_value(&p) else {
                continue;
            };
            // Derived up to this event at least (unknown ones are read by the flush).
            let Some(at) = standing.at.filter(|&at| at >= ev.seq) else {
                continue;
            };
            let mut built: Option<Built> = None;
            for sid in sessions {
                let Some(sub) = b.subs.get_mut(&(*sid, ViewKind::Me)) else {
                    continue;
                };
                let recent = sub
                    .last_sent
                    .is_some_and(|t| now.duration_since(t) < window);
                if !sub.ready
                    || recent
                    || sub.outbox.view_pending_since(board, ViewKind::Me).is_some()
                {
                    continue;
                }
                let msg = built.get_or_insert_with(|| {
                    render_me(board, player, &standing, &ev.season, at, false)
                });
                if sub.last_hash == Some(msg.hash) || msg.seq <= sub.last_seq {
                    continue;
                }
                sub.last_seq = msg.seq;
                sub.last_hash = Some(msg.hash);
                sub.last_sent = Some(now);
                sub.sent_early = true;
                sub.outbox.put_view(board, ViewKind::Me, msg.text.clone());
                metrics::PUSHES.inc();
                metrics::WITH_ACK.inc();
                woken.push(sub.outbox.clone());
            }
        }
        drop(st);
        if woken.is_empty() {
            return None;
        }
        Some(Box::new(move || {
            for outbox in woken {
                outbox.wake();
            }
        }))
    }
}
