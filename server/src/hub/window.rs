//! How long a board's players' views (`me`, `around`) wait between two flushes: the players'
//! window, stretched while the views would crowd out the submissions or have little news
//! ([`next_window`]), and how long a `me` view is left for its player's next ack
//! ([`next_hold`]). The instance's budget over all boards is `budget.rs`. Pure.

use std::time::Duration;

/// The longest the players' window of a board grows to, in coalescing windows (1 s at the
/// default 50 ms).
const MAX_STRETCH: u32 = 20;

/// The longest players' window for a coalescing window of `coalesce`: a view waits at most
/// this between two flushes of it, or after its hold and the next flush.
pub(super) fn longest_window(coalesce: Duration) -> Duration {
    coalesce * MAX_STRETCH
}

/// The longest the players' window grows to, in coalescing windows (100 ms at the default
/// 50 ms), while it is stretched because most `me` watchers keep submitting
/// ([`Stretch::WithAcks`]): their acks keep them current, and the hold after an ack
/// ([`next_hold`]) takes the rest of the longest window.
pub(super) const WITH_ACKS_STRETCH: u32 = 2;

/// Why a board's players' window was stretched (`scorecast_views_stretches_total{cause}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stretch {
    /// Most of its `me` watchers' writers had not taken their update of two windows before.
    SessionsBehind,
    /// The flush's own work (planning, deriving, rendering, offering; not its Redis reads) took
    /// more than a quarter of the window: the views would crowd out the submissions.
    FlushBudget,
    /// The instance's flushes offered more `me` and `around` messages than
    /// `ws.player_pushes_per_sec` allows (`budget.rs`).
    PushBudget,
    /// Most of its `me` watchers were held back for their own ack: their update of less than a
    /// window before went with an ack (`commit.rs`). They keep submitting, and each ack keeps
    /// them current, so a flush has little to send them.
    WithAcks,
}

impl Stretch {
    pub fn label(self) -> &'static str {
        match self {
            Stretch::SessionsBehind => "sessions_behind",
            Stretch::FlushBudget => "flush_budget",
            Stretch::PushBudget => "push_budget",
            Stretch::WithAcks => "with_acks",
        }
    }
}

/// The players' (`me`, `around`) window before a board's next flush of them: `coalesce_ms` while
/// its sessions keep up and its flushes stay within budget; doubled (up to [`longest_window`])
/// after a flush that found most of its `me` watchers behind (their update of two windows
/// before was still in the outbox, so it was deferred) or that spent more than a quarter of the
/// window on its own work (`busy`); halved back once they keep up and the work would fit a
/// quarter of the halved window. A board whose views cannot keep up is flushed less often
/// instead: that CPU goes to the submissions. Never below `coalesce_ms`. `top` views are not
/// stretched: they are flushed every `coalesce_ms` (`changes.rs`).
pub(super) fn next_window(
    window: Duration,
    coalesce: Duration,
    flushed: Flushed,
    busy: Duration,
) -> (Duration, Option<Stretch>) {
    let cause = if flushed.deferred * 2 > flushed.me {
        Some(Stretch::SessionsBehind)
    } else if busy * 4 > window {
        Some(Stretch::FlushBudget)
    } else if flushed.held * 2 > flushed.me {
        Some(Stretch::WithAcks)
    } else {
        None
    };
    // A held view waits out its hold past its ack's update, then up to a window for the next
    // flush: stretched for acks, the window stays short and leaves the rest to the hold.
    let max = match cause {
        Some(Stretch::WithAcks) => coalesce * WITH_ACKS_STRETCH,
        _ => longest_window(coalesce),
    };
    match cause {
        Some(_) if window < max => ((window * 2).min(max), cause),
        Some(_) => (window, cause),
        None if busy * 8 <= window => ((window / 2).max(coalesce), None),
        None => (window, None),
    }
}

/// How long a flush holds a `me` view back after an update that went with its ack
/// ([`Sub::held_until`](super::board::Sub::held_until)), after a players' flush that did
/// `flushed`, for a board whose players' window is now `window`: doubled (from one coalescing
/// window) while most of the flush's `me` views had an update go with their player's ack less
/// than the longest window ago — the players keep submitting, and each ack keeps them current,
/// so a push of its own would mostly tell them what their next ack tells them anyway — and
/// halved back once most had not. (Whether the *last* update went with an ack would not do: a
/// view's hold ends with a flush's push, so only players who submit again within the hold
/// would count, and a hold shorter than their pace would never grow.)
/// Never more than what `window` leaves of the longest window (`max`), so that a held view
/// waits at most `max` in all: the hold, then a window for the next flush; never less than one
/// coalescing window (at most one message per view per window).
pub(super) fn next_hold(
    hold: Duration,
    window: Duration,
    coalesce: Duration,
    max: Duration,
    flushed: Flushed,
) -> Duration {
    let hold = if flushed.acked * 2 > flushed.me {
        hold * 2
    } else {
        hold / 2
    };
    hold.min(max.saturating_sub(window)).max(coalesce)
}

/// What a flush did with its `me` views.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Flushed {
    /// `me` views it was planned for.
    pub(super) me: u64,
    /// Of those, left for a later flush because their session was behind.
    pub(super) deferred: u64,
    /// `me` and `around` messages it offered.
    pub(super) sent: u64,
    /// Of those, held back for their player's next ack (`commit.rs`), found so by this flush or
    /// skipped as held since an earlier one.
    pub(super) held: u64,
    /// Of those, the ones with an update that went with their player's ack less than the
    /// longest window ago, held or not.
    pub(super) acked: u64,
    /// The time the offer spent under the board's lock, its chunks summed.
    pub(super) busy: Duration,
}

impl std::ops::AddAssign for Flushed {
    fn add_assign(&mut self, o: Flushed) {
        self.me += o.me;
        self.deferred += o.deferred;
        self.sent += o.sent;
        self.held += o.held;
        self.acked += o.acked;
        self.busy += o.busy;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The players' window doubles while most `me` watchers are behind, up to 20 windows (1 s
    /// at 50 ms), and halves back once they keep up; a flush without `me` views never
    /// stretches it.
    #[test]
    fn the_window_stretches_while_most_watchers_are_behind_and_comes_back() {
        let coalesce = ms(50);
        let idle = Duration::ZERO;
        let behind = Flushed {
            me: 10,
            deferred: 6,
            sent: 4,
            ..Flushed::default()
        };
        let keeping_up = Flushed {
            me: 10,
            deferred: 5,
            sent: 5,
            ..Flushed::default()
        };
        let mut w = coalesce;
        for want in [100, 200, 400, 800, 1000, 1000] {
            let (next, cause) = next_window(w, coalesce, behind, idle);
            assert_eq!((next, cause), (ms(want), Some(Stretch::SessionsBehind)));
            w = next;
        }
        for want in [500, 250, 125, 62, 50, 50] {
            w = next_window(w, coalesce, keeping_up, idle).0;
            assert_eq!(w.as_millis(), want);
        }
        assert_eq!(
            next_window(coalesce, coalesce, Flushed::default(), idle),
            (coalesce, None)
        );
    }

    /// The hold after an ack's update doubles while most `me` views had their last update with
    /// their player's ack, up to what the players' window leaves of the longest (900 ms at a
    /// 100 ms window), and halves back once most did not; never under one coalescing window.
    #[test]
    fn the_hold_grows_while_most_watchers_keep_submitting_within_the_longest_window() {
        let (coalesce, max) = (ms(50), ms(1000));
        let held = Flushed {
            me: 10,
            acked: 6,
            held: 1,
            sent: 9,
            ..Flushed::default()
        };
        let half = Flushed {
            acked: 5,
            held: 5,
            ..held
        };
        let window = ms(100);
        let mut hold = coalesce;
        for want in [100, 200, 400, 800, 900, 900] {
            hold = next_hold(hold, window, coalesce, max, held);
            assert_eq!(hold, ms(want));
        }
        for want in [450, 225, 112, 56, 50, 50] {
            hold = next_hold(hold, window, coalesce, max, half);
            assert_eq!(hold.as_millis(), want);
        }
        assert_eq!(
            next_hold(ms(900), ms(400), coalesce, max, held),
            ms(600),
            "a longer window leaves less"
        );
        assert_eq!(
            next_hold(ms(900), max, coalesce, max, held),
            coalesce,
            "at the longest window: one coalescing window"
        );
        for w in [50, 100, 400, 500, 700, 950] {
            let h = next_hold(ms(900), ms(w), coalesce, max, held);
            assert!(ms(w) + h <= max, "{w} ms");
        }
    }

    /// The players' window doubles while most `me` watchers are held for their own acks, up to
    /// two coalescing windows (the hold takes the rest), and halves back once most are not;
    /// being behind comes first.
    #[test]
    fn the_window_stretches_while_most_watchers_are_held_for_their_acks() {
        let coalesce = ms(50);
        let idle = Duration::ZERO;
        let held = Flushed {
            me: 10,
            held: 6,
            sent: 4,
            ..Flushed::default()
        };
        let mut w = coalesce;
        for want in [100, 100] {
            let (next, cause) = next_window(w, coalesce, held, idle);
            assert_eq!((next, cause), (ms(want), Some(Stretch::WithAcks)));
            w = next;
        }
        let behind = Flushed {
            deferred: 6,
            ..held
        };
        assert_eq!(
            next_window(w, coalesce, behind, idle),
            (ms(200), Some(Stretch::SessionsBehind))
        );
        assert_eq!(
            next_window(ms(1000), coalesce, held, idle),
            (ms(1000), Some(Stretch::WithAcks)),
            "stretched further by another cause: kept"
        );
        let half = Flushed { held: 5, ..held };
        assert_eq!(next_window(w, coalesce, half, idle), (ms(50), None));
    }

    /// A flush whose own work exceeds a quarter of the window stretches it; it comes back only
    /// once that work fits a quarter of the halved window.
    #[test]
    fn the_window_stretches_while_flushes_exceed_their_budget() {
        let coalesce = ms(50);
        let none = Flushed::default();
        assert_eq!(
            next_window(coalesce, coalesce, none, ms(13)),
            (ms(100), Some(Stretch::FlushBudget))
        );
        assert_eq!(
            next_window(coalesce, coalesce, none, ms(12)),
            (coalesce, None),
            "within a quarter"
        );
        assert_eq!(
            next_window(ms(400), coalesce, none, ms(60)),
            (ms(400), None),
            "fits this window, not the halved one: kept"
        );
        assert_eq!(
            next_window(ms(400), coalesce, none, ms(50)),
            (ms(200), None)
        );
    }
}
