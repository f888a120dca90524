//! One watched board: its subscriptions, what changed since the last flush, and what the hub
//! remembers between flushes (the highest `seq` seen, each player's last standing, the season).
//!
//! Each watched board is a [`BoardCell`]: its state under a lock of its own, so a flush of one
//! board (planning, deriving, rendering and offering every view of it) never waits for another
//! board, nor for a subscribe or a disconnect elsewhere. The registry (`mod.rs`) only maps the
//! board's id to its cell.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use scorecast_shared::protocol::ViewKind;
use scorecast_shared::{Id, View};
use tokio::sync::Notify;

use super::around::Kept;
use super::derive::{Move, Standings};
use super::holds::Holds;
use super::outbox::Outbox;
use super::window::{longest_window, Flushed, Stretch};
use super::SessionId;

/// A subscription: one session's view of one kind on the board.
pub(super) type SubKey = (SessionId, ViewKind);

/// A watched board's state behind its own lock, shared by the registry, its worker and the
/// event feed. Lock order: a shard of the registry may be held while taking a board's, never the
/// other way round.
pub(super) struct BoardCell {
    state: Mutex<Board>,
    /// The board's worker waits on this.
    pub wake: Arc<Notify>,
    /// The players' window the worker flushes `me` and `around` views at (`worker.rs`), in µs,
    /// and why it is stretched (0: it is not; else 1 + the [`Stretch`] index), for `/metrics`.
    window_us: AtomicU64,
    stretch: AtomicU8,
    /// How long a `me` view is held back after an update that went with its ack (`worker.rs`),
    /// in µs, for `/metrics`.
    hold_us: AtomicU64,
}

impl BoardCell {
    pub fn new(board: Board) -> BoardCell {
        BoardCell {
            wake: board.wake.clone(),
            state: Mutex::new(board),
            window_us: AtomicU64::new(0),
            stretch: AtomicU8::new(0),
            hold_us: AtomicU64::new(0),
        }
    }

    /// Records the worker's players' window after a flush, and the cause of its stretch
    /// (`None`: not stretched).
    pub fn set_window(&self, window: Duration, stretched_by: Option<Stretch>) {
        self.window_us
            .store(window.as_micros() as u64, Ordering::Relaxed);
        let cause = stretched_by.map_or(0, |c| 1 + c as u8);
        self.stretch.store(cause, Ordering::Relaxed);
    }

    /// The players' window (zero before the first flush of players' views) and the cause of its
    /// last stretch.
    pub fn window(&self) -> (Duration, Option<Stretch>) {
        let w = Duration::from_micros(self.window_us.load(Ordering::Relaxed));
        let cause = match self.stretch.load(Ordering::Relaxed) {
            1 => Some(Stretch::SessionsBehind),
            2 => Some(Stretch::FlushBudget),
            3 => Some(Stretch::PushBudget),
            4 => Some(Stretch::WithAcks),
            _ => None,
        };
        (w, cause)
    }

    /// Records the worker's hold after an ack's update.
    pub fn set_hold(&self, hold: Duration) {
        self.hold_us
            .store(hold.as_micros() as u64, Ordering::Relaxed);
    }

    /// The hold after an ack's update (zero before the first flush of players' views).
    pub fn hold(&self) -> Duration {
        Duration::from_micros(self.hold_us.load(Ordering::Relaxed))
    }

    pub fn lock(&self) -> MutexGuard<'_, Board> {
        crate::sync::lock(&self.state)
    }

    /// [`Board::mark_resync`] under the board's lock.
    pub fn mark_resync(&self) {
        self.lock().mark_resync();
    }
}

pub(super) struct Board {
    /// Set when the registry dropped the board (nobody watches it): its worker ends, and a later
    /// subscribe makes a new cell.
    pub gone: bool,
    /// Every subscription; change it through [`Board::insert_sub`] and [`Board::remove_sub`],
    /// which keep the indexes below.
    pub subs: foldhash::HashMap<SubKey, Sub>,
    /// The sessions watching each player's `me` here: a flush that derived the standings visits
    /// only the views of the players whose standing changed (`plan.rs`), not every view.
    pub me_watchers: foldhash::HashMap<Id, Vec<SessionId>>,
    /// The sessions of the `me` views that are not held ([`Sub::held`]): when the derivation
    /// changed more standings than there are of these, a flush visits these instead (most views
    /// held: the flush costs what the unheld ones cost, not one lookup per standing).
    pub me_active: foldhash::HashSet<SessionId>,
    /// The `top` and `around` subscriptions.
    pub others: foldhash::HashSet<SubKey>,
    /// Subscriptions whose `force` is set (may hold some that were removed or served since).
    pub forced: foldhash::HashSet<SubKey>,
    /// `me` views held back for their player's next ack ([`Sub::held`]), by when their hold
    /// ends: a flush skips them until then ([`Board::release_held`]), so a view held for most
    /// of a second costs nothing in the flushes meanwhile. May hold entries of views removed,
    /// replaced or held again since (dropped when due).
    pub held: Holds,
    pub dirty: Dirty,
    pub wake: Arc<Notify>,
    /// The last event's seq: pub/sub delivers in publish order, so a smaller one means Redis
    /// lost its data.
    pub last_event_seq: u64,
    /// The highest seq known committed; a later read below it means Redis lost its data.
    pub high_seq: u64,
    /// Each player's last known standing, for `me` (and its `previous_rank`).
    pub me: Standings,
    /// The season the views last showed.
    pub season: Option<String>,
    /// Moves of the events since the last flush, in order, for deriving `me` standings
    /// (`derive.rs`); `pending_seqs` holds each event's `seq` and the index of its first move.
    pub pending: Vec<Move>,
    pub pending_seqs: Vec<(u64, usize)>,
    /// Whether the board ranks ordinally (`None` until the worker read the config): only then
    /// are standings derived from events.
    pub ordinal: Option<bool>,
    /// What this instance's flushes of the board did (beside the process-wide metrics).
    pub counts: ViewCounts,
}

/// The view work of one instance on one board, counted beside the process-wide `/metrics`
/// counters of the same names, so that a caller (a test) measures only this board's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViewCounts {
    /// `me` standings brought up to date from the change events (`me_standings{derived}`).
    pub me_derived: u64,
    /// `me` standings read from Redis (`me_standings{read}`).
    pub me_read: u64,
    /// `around` windows kept from the change events (`around_windows{derived}`).
    pub around_derived: u64,
    /// `around` windows read from Redis (`around_windows{read}`).
    pub around_read: u64,
    /// `me` updates queued with the submitter's ack (`views_with_ack`).
    pub with_ack: u64,
    /// `me` updates left to a later flush (`views_deferred`).
    pub deferred: u64,
    /// `me` and `around` messages offered by the flushes (what the push budget counts).
    pub pushed: u64,
}

pub(super) struct Sub {
    pub view: View,
    pub player: Option<Id>,
    /// Bumped when the subscription is replaced, so a flush planned for the old one is dropped.
    pub gen: u64,
    pub outbox: Arc<Outbox>,
    /// False until the subscribe's own snapshot went out: flushes skip it until then.
    pub ready: bool,
    /// Recompute at the next flush whatever the events say (snapshot older than known events).
    pub force: bool,
    pub last_seq: u64,
    pub last_hash: Option<u64>,
    /// `around`: the ranks it shows, to tell whether a change can reach it.
    pub window: Option<(u64, u64)>,
    /// `around` on an ordinal board: the rows it shows, kept up to date from the change events
    /// (`around.rs`); `None` = read at the next change that reaches it.
    pub kept: Option<Kept>,
    /// When the last update was offered, and whether it went with the submitter's ack
    /// (`commit.rs`; see [`Sub::held_until`]).
    pub last_sent: Option<Instant>,
    pub sent_early: bool,
    /// When the last update that went with the player's ack was offered: the board's hold
    /// grows while most `me` watchers' players had one within the longest window
    /// (`window.rs`'s `next_hold`).
    pub acked_at: Option<Instant>,
    /// `me`: held back for the player's next ack until then ([`Sub::held_until`]); flushes skip
    /// the view until [`Board::release_held`] forces it.
    pub held: Option<Instant>,
    /// `me`: an ack of the player could not bring the update (the view had sent a message less
    /// than a window before, `commit.rs`): the flush's next update is the ack's, and is held
    /// after as if it had gone with it.
    pub ack_owed: bool,
}

impl Sub {
    /// A subscription whose snapshot has not gone out yet.
    pub fn new(view: View, player: Option<Id>, gen: u64, outbox: Arc<Outbox>) -> Sub {
        Sub {
            view,
            player,
            gen,
            outbox,
            ready: false,
            force: false,
            last_seq: 0,
            last_hash: None,
            window: None,
            kept: None,
            last_sent: None,
            sent_early: false,
            acked_at: None,
            held: None,
            ack_owed: false,
        }
    }

    /// Whether an update with content `hash` at `seq` tells this subscription something new.
    pub fn is_news(&self, hash: u64, seq: u64) -> bool {
        self.last_hash != Some(hash) && seq > self.last_seq
    }

    /// Records an update offered at `now` (`with_ack`: queued with the submitter's ack, or the
    /// first one after an ack that could not bring it: [`Sub::ack_owed`]).
    pub fn sent(&mut self, hash: u64, seq: u64, now: Instant, with_ack: bool) {
        self.ack_owed = false;
        self.last_seq = seq;
        self.last_hash = Some(hash);
        self.last_sent = Some(now);
        self.sent_early = with_ack;
        if with_ack {
            self.acked_at = Some(now);
        }
    }

    /// Whether an update went with the player's ack less than `span` before `now`.
    pub fn acked_within(&self, now: Instant, span: Duration) -> bool {
        self.acked_at.is_some_and(|t| now.duration_since(t) < span)
    }

    /// Whether the last update was offered less than `span` before `now`.
    pub fn sent_within(&self, now: Instant, span: Duration) -> bool {
        self.last_sent.is_some_and(|t| now.duration_since(t) < span)
    }

    /// Until when a flush holds this `me` view's update back, for the player's next ack to
    /// carry it (`commit.rs`) or a later flush (`None`: not held): for `after_ack` after an
    /// update that went with an ack (`window.rs`'s `next_hold`: a player who keeps submitting
    /// is kept current by their acks), and for two `window`s while a submission of the session
    /// awaits its answer (the ack is on its way; past that, it is late). Never longer.
    pub fn held_until(
        &self,
        now: Instant,
        window: Duration,
        after_ack: Duration,
    ) -> Option<Instant> {
        let awaiting = if self.outbox.awaits_ack() {
            2 * window
        } else {
            Duration::ZERO
        };
        let after_ack = if self.sent_early {
            after_ack
        } else {
            Duration::ZERO
        };
        let until = self.last_sent? + awaiting.max(after_ack);
        (until > now).then_some(until)
    }
}

/// What changed on a board since the last flush.
#[derive(Default, Debug)]
pub(super) struct Dirty {
    pub any: bool,
    /// Recompute every view (rollover, new season, unreadable event).
    pub full: bool,
    /// Send every view as a fresh snapshot with `resync: true`.
    pub resync: bool,
    /// Players whose own score changed.
    pub players: foldhash::HashSet<Id>,
    /// Rank ranges whose occupants may have moved (inclusive; `u64::MAX` = to the end).
    pub ranges: Vec<(u64, u64)>,
    /// Someone joined or left: `top.total` changed.
    pub total_changed: bool,
}

impl Board {
    /// A board entry with no subscriptions yet.
    pub fn new(wake: Arc<Notify>) -> Board {
        Board {
            gone: false,
            subs: Default::default(),
            me_watchers: Default::default(),
            me_active: Default::default(),
            others: Default::default(),
            forced: Default::default(),
            held: Holds::default(),
            dirty: Dirty::default(),
            wake,
            last_event_seq: 0,
            high_seq: 0,
            me: Standings::default(),
            season: None,
            pending: Vec::new(),
            pending_seqs: Vec::new(),
            ordinal: None,
            counts: ViewCounts::default(),
        }
    }

    /// Adds or replaces a subscription.
    pub fn insert_sub(&mut self, key: SubKey, sub: Sub) {
        self.remove_sub(&key);
        match (sub.view, &sub.player) {
            (View::Me, Some(p)) => {
                self.me_watchers.entry(p.clone()).or_default().push(key.0);
                if sub.held.is_none() {
                    self.me_active.insert(key.0);
                }
            }
            _ => {
                self.others.insert(key);
            }
        }
        self.subs.insert(key, sub);
    }

    /// Removes a subscription (if there is one).
    pub fn remove_sub(&mut self, key: &SubKey) -> Option<Sub> {
        let sub = self.subs.remove(key)?;
        self.forced.remove(key);
        match (sub.view, &sub.player) {
            (View::Me, Some(p)) => {
                self.me_active.remove(&key.0);
                if let Some(w) = self.me_watchers.get_mut(p) {
                    w.retain(|sid| *sid != key.0);
                    if w.is_empty() {
                        self.me_watchers.remove(p);
                    }
                }
            }
            _ => {
                self.others.remove(key);
            }
        }
        Some(sub)
    }

    /// `me` views, held or not (every subscription that is not a `top` or `around` one).
    pub fn me_views(&self) -> usize {
        self.subs.len() - self.others.len()
    }

    /// Whether a players' flush would visit a `me` view now, and so needs the standings derived:
    /// an unheld view, a forced one, or any while a watcher's standing is unknown (`plan.rs`).
    pub fn me_wanted(&self) -> bool {
        !self.me_active.is_empty()
            || !self.me.all_known()
            || self.forced.iter().any(|k| k.1 == ViewKind::Me)
    }

    /// When the first hold of a `me` view ends, if one is kept (the worker wakes then).
    pub fn next_release(&self) -> Option<Instant> {
        self.held.next()
    }

    /// Ends the holds due by `now`. A view that an ack's update reached since its hold began is
    /// still held ([`Sub::held_until`] with the coalescing `window` and the board's `after_ack`
    /// hold): it is held again until then, as the next flush would find it, but without that
    /// flush's visit, and counted in the [`Flushed`] returned as the flush would have counted it.
    /// Every other view still held until then is recomputed at the next players' flush (forced;
    /// the board is marked dirty for it).
    pub fn release_held(&mut self, now: Instant, window: Duration, after_ack: Duration) -> Flushed {
        let Board {
            held,
            subs,
            forced,
            me_active,
            dirty,
            ..
        } = self;
        // A resync sends every view, held or not.
        let resync = dirty.resync;
        let longest = longest_window(window);
        let mut again = Flushed::default();
        let mut holds = Vec::new();
        held.take_due(now, |until, sid| {
            let key = (sid, ViewKind::Me);
            let Some(sub) = subs.get_mut(&key).filter(|s| s.held == Some(until)) else {
                return;
            };
            if let Some(later) = sub.held_until(now, window, after_ack).filter(|_| !resync) {
                sub.held = Some(later);
                holds.push((later, sid));
                again.me += 1;
                again.held += 1;
                if sub.acked_within(now, longest) {
                    again.acked += 1;
                }
                return;
            }
            sub.held = None;
            sub.force = true;
            forced.insert(key);
            me_active.insert(sid);
            dirty.any = true;
        });
        for (until, sid) in holds {
            held.push(until, sid);
        }
        again
    }

    /// The subscription is recomputed at the next flush whatever the events say.
    pub fn force(&mut self, key: SubKey) {
        if let Some(s) = self.subs.get_mut(&key) {
            s.force = true;
            self.forced.insert(key);
        }
    }

    /// Every view is to be recomputed at the next flush (and the worker woken for it).
    pub fn mark_all_dirty(&mut self) {
        self.dirty.any = true;
        self.dirty.full = true;
        self.wake.notify_one();
    }

    /// What the hub derived is no longer trusted: every `me` standing is read again.
    pub fn forget_standings(&mut self) {
        self.pending.clear();
        self.pending_seqs.clear();
        self.me.forget();
        for s in self.subs.values_mut() {
            s.kept = None;
        }
    }

    /// Every view is to be re-sent as a fresh snapshot, and `seq` ordering restarts.
    pub fn mark_resync(&mut self) {
        crate::metrics::RESYNCS.inc();
        self.forget_standings();
        self.last_event_seq = 0;
        self.high_seq = 0;
        self.dirty.resync = true;
        self.mark_all_dirty();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coalescing window, and the hold after an ack's update, of the release tests.
    const W: Duration = Duration::from_millis(50);

    #[test]
    fn a_me_view_is_held_for_an_ack_at_most_two_windows() {
        let w = Duration::from_millis(50);
        let t0 = Instant::now();
        let outbox = Arc::new(Outbox::new(4));
        let mut sub = Sub::new(View::Me, None, 1, outbox.clone());
        assert_eq!(sub.held_until(t0, w, w), None, "never sent: not held");
        sub.sent(1, 1, t0, false);
        assert_eq!(sub.held_until(t0, w, w), None, "sent by a flush: not held");
        sub.sent(2, 2, t0, true);
        assert_eq!(
            sub.held_until(t0 + w / 2, w, w),
            Some(t0 + w),
            "within a window of an ack's update"
        );
        assert_eq!(sub.held_until(t0 + w, w, w), None, "a window later");
        let submitting = outbox.submitting();
        assert_eq!(
            sub.held_until(t0 + w, w, w),
            Some(t0 + 2 * w),
            "an ack is on its way"
        );
        assert_eq!(
            sub.held_until(t0 + 2 * w, w, w),
            None,
            "late: never past two windows"
        );
        drop(submitting);
        assert_eq!(sub.held_until(t0 + w, w, w), None, "answered");
        assert!(sub.is_news(3, 3) && !sub.is_news(2, 3) && !sub.is_news(3, 2));
    }

    /// A longer hold after an ack's update holds the view that long; an update a flush sent
    /// holds nothing, however long the hold, but the player still counts as submitting until
    /// the longest window passed since their ack.
    #[test]
    fn a_longer_hold_after_an_ack_holds_the_view_that_long() {
        let w = Duration::from_millis(50);
        let hold = 18 * w;
        let t0 = Instant::now();
        let mut sub = Sub::new(View::Me, None, 1, Arc::new(Outbox::new(4)));
        assert!(!sub.acked_within(t0, w), "nothing went with an ack yet");
        sub.sent(1, 1, t0, true);
        assert_eq!(
            sub.held_until(t0 + 17 * w, w, hold),
            Some(t0 + hold),
            "within the hold"
        );
        assert_eq!(sub.held_until(t0 + hold, w, hold), None, "past it");
        sub.sent(2, 2, t0, false);
        assert_eq!(
            sub.held_until(t0 + w, w, hold),
            None,
            "sent by a flush: not held"
        );
        // The player still keeps submitting: the flush's push ends the hold, not that.
        assert!(sub.acked_within(t0 + 19 * w, 20 * w));
        assert!(!sub.acked_within(t0 + 20 * w, 20 * w));
    }

    /// A held view is left alone until its hold ends; then it is forced (recomputed at the next
    /// flush) and the board marked dirty. A hold replaced by a later one, or of a view removed
    /// or replaced meanwhile, releases nothing.
    #[test]
    fn a_hold_ends_when_due_and_only_for_the_view_still_held() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut b = Board::new(Arc::new(Notify::new()));
        let outbox = Arc::new(Outbox::new(4));
        for sid in 1..=3 {
            let id = Id::parse(&format!("p{sid}")).expect("a valid id");
            b.insert_sub(
                (sid, ViewKind::Me),
                Sub::new(View::Me, Some(id), 1, outbox.clone()),
            );
        }
        let hold = |b: &mut Board, sid: SessionId, until| {
            b.subs
                .get_mut(&(sid, ViewKind::Me))
                .expect("subscribed")
                .held = Some(until);
            b.held.push(until, sid);
            b.me_active.remove(&sid);
        };
        hold(&mut b, 1, ms(100));
        hold(&mut b, 2, ms(200));
        hold(&mut b, 3, ms(300));
        // Held again until later: its first hold's end releases nothing.
        hold(&mut b, 2, ms(900));
        // Replaced: the new subscription is not held.
        let id = Id::parse("p3").expect("a valid id");
        b.insert_sub(
            (3, ViewKind::Me),
            Sub::new(View::Me, Some(id), 2, outbox.clone()),
        );

        b.release_held(ms(50), W, W);
        assert_eq!(b.next_release(), Some(ms(100)), "none due");
        assert!(!b.dirty.any && b.forced.is_empty());
        let active = |b: &Board| {
            let mut a: Vec<SessionId> = b.me_active.iter().copied().collect();
            a.sort_unstable();
            a
        };
        assert_eq!(
            (active(&b), b.me_views()),
            (vec![3], 3),
            "the replaced one is not held"
        );

        b.release_held(ms(400), W, W);
        assert_eq!(b.next_release(), Some(ms(900)));
        assert_eq!(
            b.forced.iter().copied().collect::<Vec<_>>(),
            [(1, ViewKind::Me)]
        );
        assert!(b.dirty.any);
        let sub = |b: &Board, sid| {
            (
                b.subs[&(sid, ViewKind::Me)].held,
                b.subs[&(sid, ViewKind::Me)].force,
            )
        };
        assert_eq!(sub(&b, 1), (None, true));
        assert_eq!(sub(&b, 2), (Some(ms(900)), false), "still held");
        assert_eq!(
            sub(&b, 3),
            (None, false),
            "the replaced one's hold released nothing"
        );

        b.release_held(ms(900), W, W);
        assert_eq!(b.next_release(), None, "the last hold ended");
        assert_eq!(sub(&b, 2), (None, true));
        assert_eq!(b.held.next(), None);
        assert_eq!(active(&b), [1, 2, 3]);
        b.remove_sub(&(2, ViewKind::Me));
        assert_eq!((active(&b), b.me_views()), (vec![1, 3], 2));
    }
    /// A view whose player's ack brought it an update while it was held is held again when its
    /// first hold ends, until the hold after that update ends: not forced, the board not marked
    /// dirty, and counted as a flush would have counted it (visited, held, acked). Once that
    /// hold ends with no newer ack, the view is forced as any other.
    #[test]
    fn a_hold_that_an_ack_renewed_is_held_again_without_a_flush() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let hold = 18 * W;
        let mut b = Board::new(Arc::new(Notify::new()));
        let outbox = Arc::new(Outbox::new(4));
        let id = Id::parse("p1").expect("a valid id");
        b.insert_sub(
            (1, ViewKind::Me),
            Sub::new(View::Me, Some(id), 1, outbox.clone()),
        );
        let sub = b.subs.get_mut(&(1, ViewKind::Me)).expect("subscribed");
        // An update with the ack at 0 ms: held until 900 ms; another ack's at 600 ms.
        sub.sent(1, 1, t0, true);
        sub.held = Some(ms(900));
        sub.sent(2, 2, ms(600), true);
        b.held.push(ms(900), 1);
        b.me_active.remove(&1);

        let again = b.release_held(ms(900), W, hold);
        assert_eq!((again.me, again.held, again.acked), (1, 1, 1));
        assert!(!b.dirty.any && b.forced.is_empty(), "no flush for it");
        assert_eq!(b.subs[&(1, ViewKind::Me)].held, Some(ms(1500)));
        assert_eq!(b.next_release(), Some(ms(1500)));
        assert!(b.me_active.is_empty(), "still held");

        let again = b.release_held(ms(1500), W, hold);
        assert_eq!(again, Flushed::default());
        assert_eq!(
            b.forced.iter().copied().collect::<Vec<_>>(),
            [(1, ViewKind::Me)]
        );
        assert!(b.dirty.any && b.me_active.contains(&1));
        assert_eq!(b.subs[&(1, ViewKind::Me)].held, None);
        assert_eq!(b.next_release(), None);
    }

    /// Under a resync every view is sent, held or not: a renewed hold is not kept.
    #[test]
    fn a_resync_releases_a_renewed_hold() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut b = Board::new(Arc::new(Notify::new()));
        let id = Id::parse("p1").expect("a valid id");
        b.insert_sub(
            (1, ViewKind::Me),
            Sub::new(View::Me, Some(id), 1, Arc::new(Outbox::new(4))),
        );
        let sub = b.subs.get_mut(&(1, ViewKind::Me)).expect("subscribed");
        sub.sent(1, 1, ms(600), true);
        sub.held = Some(ms(900));
        b.held.push(ms(900), 1);
        b.dirty.resync = true;
        assert_eq!(b.release_held(ms(900), W, 18 * W), Flushed::default());
        assert_eq!(b.subs[&(1, ViewKind::Me)].held, None);
        assert!(b.forced.contains(&(1, ViewKind::Me)));
    }
}
