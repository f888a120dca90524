//! Which views a flush recomputes, and the fewest reads that serve them. Pure: no lock, no
//! Redis, no clock, no metrics, nothing changed — the worker takes the board's changes
//! (`changes.rs`: the dirty state, the derivations), calls [`plan`], and does the reads outside
//! the lock.
//!
//! Each *distinct* read is done once: one `top` read of the largest limit serves every `top`
//! view; every (player, radius) window of the `around` views is read in one bulk call. `me`
//! standings are derived from the events (`derive.rs`) where that is exact; the rest are read
//! together, in one bulk read per flush. The worker sends the three concurrently, on one
//! multiplexed connection: one round trip per board per flush, whatever the number of viewers.

use std::collections::HashSet;

use scorecast_shared::protocol::ViewKind;
use scorecast_shared::{Id, View};

use super::board::{Board, Dirty, Sub, SubKey};
use crate::store::Read;

/// One read a flush or a snapshot needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Want {
    /// The top of the board (as many rows as the largest `top` view shows).
    Top,
    Me(Id),
    Around(Id, u64),
}

impl Want {
    /// What `view` of `player` reads; `None` for a player view without a player.
    pub fn of(view: View, player: Option<&Id>) -> Option<Want> {
        match (view, player) {
            (View::Top { .. }, _) => Some(Want::Top),
            (View::Me, Some(p)) => Some(Want::Me(p.clone())),
            (View::Around { radius }, Some(p)) => Some(Want::Around(p.clone(), radius.into())),
            _ => None,
        }
    }

    /// The store read (`top_limit` rows for [`Want::Top`]).
    pub fn read(&self, top_limit: u64) -> Read<'_> {
        match self {
            Want::Top => Read::Top {
                offset: 0,
                limit: top_limit,
            },
            Want::Me(p) => Read::Player(p),
            Want::Around(p, radius) => Read::Around {
                player: p,
                radius: *radius,
            },
        }
    }
}

/// How many rows a view shows of its read (only `top` views differ).
pub(super) fn rows(view: View) -> u64 {
    match view {
        View::Top { limit } => limit.into(),
        _ => 0,
    }
}

/// One flush: the reads to do and the subscriptions they serve.
#[derive(Debug)]
pub(super) struct Plan {
    pub resync: bool,
    pub high_seq: u64,
    pub top_limit: u64,
    /// `top` and `around` reads.
    pub reads: Vec<Want>,
    /// Players whose `me` standing is read, all in one bulk read (the rest are derived).
    pub me_reads: Vec<Id>,
    /// The subscriptions to offer the results to, each with the generation planned for.
    pub targets: Vec<(SubKey, u64)>,
    /// `me` and `around` views the changes reached were left for when the players' window
    /// elapses (only `top` views are in this flush).
    pub players_later: bool,
    /// Set when the flush reads every watcher's unknown standing: the standings' loss count
    /// it covers (`Standings::mark_known`, once read).
    pub me_known: Option<u64>,
    /// `me` views held for their player's next ack (`Sub::held`: skipped until their hold ends,
    /// then forced).
    pub held: u64,
}

impl Plan {
    /// A plan that reaches nothing yet, for `b`'s current `seq`.
    fn empty(b: &Board, resync: bool, players_later: bool) -> Plan {
        Plan {
            resync,
            high_seq: b.high_seq,
            top_limit: 0,
            reads: Vec::new(),
            me_reads: Vec::new(),
            targets: Vec::new(),
            players_later,
            me_known: None,
            held: 0,
        }
    }
}

#[derive(Debug)]
pub(super) enum Planned {
    /// The board entry is gone (nobody watches it): the worker ends.
    Gone,
    Nothing,
    /// Only `me` and `around` views were reached, and their window has not elapsed.
    Later,
    Flush(Plan),
}

/// Sorts and merges rank ranges, so membership is a binary search.
pub(super) fn merge_ranges(mut r: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
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
pub(super) fn meets(ranges: &[(u64, u64)], a: u64, b: u64) -> bool {
    // The first range that ends at or after `a`; it meets [a, b] if it starts by `b`.
    let i = ranges.partition_point(|r| r.1 < a);
    ranges.get(i).is_some_and(|r| r.0 <= b)
}

/// What a flush took from its board ([`super::changes::take`]): the dirty state since the last
/// flush, whether `me` standings are derived from the events, and the `around` views whose kept
/// window the events were applied to (true: a row changed).
#[derive(Debug, Default)]
pub(super) struct Changes {
    pub dirty: Dirty,
    /// `dirty.ranges`, sorted and merged.
    pub ranges: Vec<(u64, u64)>,
    pub derive: bool,
    pub arounds: foldhash::HashMap<SubKey, bool>,
}

/// The `top` views of `b` its dirty state reaches, planned without taking that state (the
/// players' flush takes it later): a `top N` view is reached by a join or a removal, a move
/// within its first `N` ranks, or its being forced. `None` when none is. Pure.
pub(super) fn plan_top(b: &Board) -> Option<Plan> {
    let d = &b.dirty;
    let mut plan = Plan::empty(b, d.resync, true);
    for key in b.others.iter().filter(|k| k.1 == ViewKind::Top) {
        let Some(sub) = b.subs.get(key).filter(|s| s.ready) else {
            continue;
        };
        let View::Top { limit } = sub.view else {
            continue;
        };
        let limit = u64::from(limit);
        // A range (lo, hi) with 1 ≤ lo ≤ hi meets [1, limit] when it starts by `limit`.
        let reached = sub.force
            || d.full
            || d.resync
            || d.total_changed
            || d.ranges.iter().any(|r| r.0 <= limit);
        if reached {
            plan.top_limit = plan.top_limit.max(limit);
            plan.targets.push((*key, sub.gen));
        }
    }
    if plan.targets.is_empty() {
        return None;
    }
    plan.reads.push(Want::Top);
    Some(plan)
}

/// Decides which ready views of `b` the changes reach and the fewest reads that serve them;
/// `None` when none is reached. Pure: it reads the board and the changes and returns a value.
pub(super) fn plan(b: &Board, c: &Changes) -> Option<Plan> {
    let d = &c.dirty;
    let ranges = &c.ranges;
    let in_ranges = |r: u64| meets(ranges, r, r);
    let mut plan = Plan::empty(b, d.resync, false);
    let derive = c.derive;
    let mut reads = HashSet::new();
    let mut me_reads = HashSet::new();
    let mut visit = |key: &SubKey, sub: &Sub| {
        if !sub.ready {
            return;
        }
        if sub.held.is_some() && !(d.full || d.resync) {
            // Held for the player's next ack: visited once the hold ends (forced then).
            return;
        }
        let force = sub.force || d.full || d.resync;
        // Hashes the player's id: asked only where the answer matters (not for a derived `me`).
        let mine = || sub.player.as_ref().is_some_and(|p| d.players.contains(p));
        if let (View::Me, Some(p)) = (sub.view, sub.player.as_ref()) {
            // One lookup: the standing and whether the derivation just changed it.
            let (known, changed) = b.me.get_changed(p).unzip();
            let read = if derive {
                known.is_none_or(|m| m.at.is_none())
            } else {
                force || mine() || known.and_then(|m| m.rank).is_some_and(in_ranges)
            };
            if read {
                me_reads.insert(p.clone());
            }
            if read || (derive && (force || changed == Some(true))) {
                plan.targets.push((*key, sub.gen));
            }
            return;
        }
        if sub.view.kind() == ViewKind::Around {
            match c.arounds.get(key) {
                // Kept up to date, and no row changed: nothing to send.
                Some(false) => return,
                // Kept up to date, and a row changed: sent from the kept rows, with no read.
                Some(true) => {
                    plan.targets.push((*key, sub.gen));
                    return;
                }
                // Not kept (never read, or a move made it inexact): read if a change reaches it.
                None => {}
            }
        }
        let affected = force
            || match sub.view {
                View::Top { limit } => d.total_changed || meets(ranges, 1, limit.into()),
                View::Me => false,
                // One past the window: a newcomer right below it can shift a window that
                // sits at the bottom of the board.
                View::Around { .. } => {
                    mine()
                        || sub
                            .window
                            .is_some_and(|(a, z)| meets(ranges, a, z.saturating_add(1)))
                }
            };
        if !affected {
            return;
        }
        // Player views always have a player (checked at subscribe).
        let Some(want) = Want::of(sub.view, sub.player.as_ref()) else {
            return;
        };
        plan.top_limit = plan.top_limit.max(rows(sub.view));
        reads.insert(want);
        plan.targets.push((*key, sub.gen));
    };
    // `top` and `around` views first: the flush offers in this order, so their sessions are
    // woken (and queued to write) before thousands of `me` sessions are.
    for key in &b.others {
        if let Some(sub) = b.subs.get(key) {
            visit(key, sub);
        }
    }
    if derive && b.me.all_known() {
        // Every watcher's standing is known and derived: the `me` views to visit are those of
        // the players the derivation changed, and the forced ones (visited once: a forced view
        // is left to the second loop). O(changes), not O(views); and when most views are held
        // (their players keep submitting), the unheld ones: O(those).
        if b.me.changed_count() <= b.me_active.len() {
            for p in b.me.changed_players() {
                for sid in b.me_watchers.get(p).into_iter().flatten() {
                    let key = (*sid, ViewKind::Me);
                    if let Some(sub) = b.subs.get(&key).filter(|s| !s.force) {
                        visit(&key, sub);
                    }
                }
            }
        } else {
            for sid in &b.me_active {
                let key = (*sid, ViewKind::Me);
                if let Some(sub) = b.subs.get(&key).filter(|s| !s.force) {
                    visit(&key, sub);
                }
            }
        }
        let forced_me = b.forced.iter().filter(|k| k.1 == ViewKind::Me);
        for key in forced_me {
            if let Some(sub) = b.subs.get(key).filter(|s| s.force) {
                visit(key, sub);
            }
        }
    } else {
        for (key, sub) in b.subs.iter().filter(|(k, _)| k.1 == ViewKind::Me) {
            visit(key, sub);
        }
    }
    plan.held = (b.me_views() - b.me_active.len()) as u64;
    // A derived flush that visited every view read every unknown standing of a watcher (a held
    // view's is read when its hold ends: it is forced then, and visited whatever changed).
    let me_known = (derive && !b.me.all_known()).then(|| b.me.lost_gen());
    plan.me_known = me_known;
    if plan.targets.is_empty() {
        return None;
    }
    plan.reads = reads.into_iter().collect();
    plan.me_reads = me_reads.into_iter().collect();
    Some(plan)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use scorecast_shared::protocol::ViewKind;
    use tokio::sync::Notify;

    use super::super::board::Sub;
    use super::super::changes::plan_flush;
    use super::super::derive::Move;
    use super::super::outbox::Outbox;
    use super::*;

    /// The coalescing window and the hold after an ack's update, for releasing holds.
    const W: std::time::Duration = std::time::Duration::from_millis(50);

    fn id(s: &str) -> Id {
        Id::parse(s).expect("a valid id")
    }

    /// A board with ready views: session 1 `top 10`, session 2 `me` of alice (rank 50),
    /// session 3 `around` bob (radius 2, showing ranks 20..=24).
    fn board() -> Board {
        let mut b = Board::new(Arc::new(Notify::new()));
        let outbox = Arc::new(Outbox::new(8));
        let mut add = |sid, view, player: Option<&str>| {
            let mut s = Sub::new(view, player.map(id), sid, outbox.clone());
            s.ready = true;
            b.insert_sub((sid, view.kind()), s);
        };
        add(1, View::Top { limit: 10 }, None);
        add(2, View::Me, Some("alice"));
        add(3, View::Around { radius: 2 }, Some("bob"));
        b.subs
            .get_mut(&(3, ViewKind::Around))
            .expect("just added")
            .window = Some((20, 24));
        b.me.learn(&id("alice"), Some(5), Some(50), 1);
        b
    }

    fn flush(b: &mut Board) -> Plan {
        match plan_flush(b, true) {
            Planned::Flush(p) => p,
            other => panic!("expected a flush, got {other:?}"),
        }
    }

    fn sessions(p: &Plan) -> Vec<u64> {
        let mut s: Vec<u64> = p.targets.iter().map(|((sid, _), _)| *sid).collect();
        s.sort_unstable();
        s
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

    #[test]
    fn nothing_dirty_plans_nothing_and_a_replaced_board_is_gone() {
        let mut b = board();
        assert!(matches!(plan_flush(&mut b, true), Planned::Nothing));
        b.gone = true;
        assert!(matches!(plan_flush(&mut b, true), Planned::Gone));
    }

    #[test]
    fn a_move_at_the_top_reaches_only_top_views() {
        let mut b = board();
        b.dirty.any = true;
        b.dirty.ranges = vec![(3, 5)];
        b.dirty.players.insert(id("carol"));
        let p = flush(&mut b);
        assert_eq!(sessions(&p), [1]);
        assert_eq!((p.reads.clone(), p.top_limit), (vec![Want::Top], 10));
        assert!(!b.dirty.any, "the plan took the dirty state");
    }

    #[test]
    fn a_move_through_a_players_rank_or_window_reaches_their_views() {
        let mut b = board();
        b.dirty.any = true;
        // 45..=60 crosses alice's rank 50; 25 is one past bob's window (a newcomer below it).
        b.dirty.ranges = vec![(45, 60), (25, 25)];
        let p = flush(&mut b);
        assert_eq!(sessions(&p), [2, 3]);
        assert_eq!(p.reads, vec![Want::Around(id("bob"), 2)]);
        assert_eq!(
            p.me_reads,
            vec![id("alice")],
            "not an ordinal board: `me` is read"
        );
        assert_eq!(p.top_limit, 0, "no top read");
    }

    #[test]
    fn a_players_own_change_reaches_their_views_and_a_join_reaches_top() {
        let mut b = board();
        b.dirty.any = true;
        b.dirty.players.insert(id("bob"));
        b.dirty.ranges = vec![(500, u64::MAX)];
        b.dirty.total_changed = true;
        assert_eq!(sessions(&flush(&mut b)), [1, 3]);
    }

    /// Holds alice's `me` view (session 2) until `until`, as a flush that found it held does.
    fn hold_alice(b: &mut Board, until: std::time::Instant) {
        b.subs
            .get_mut(&(2, ViewKind::Me))
            .expect("in the fixture")
            .held = Some(until);
        b.held.push(until, 2);
        b.me_active.remove(&2);
    }

    /// A `me` view held for its player's next ack is skipped while held, whatever reaches it
    /// (counted as held), and visited once its hold ends; a resync reaches it even while held.
    #[test]
    fn a_held_me_view_is_skipped_until_its_hold_ends() {
        let mut b = board();
        let t0 = std::time::Instant::now();
        let until = t0 + std::time::Duration::from_millis(900);
        hold_alice(&mut b, until);
        let reach_alice = |b: &mut Board| {
            b.dirty.any = true;
            b.dirty.ranges = vec![(45, 60)];
        };
        reach_alice(&mut b);
        assert!(
            matches!(plan_flush(&mut b, true), Planned::Nothing),
            "alice's view is held"
        );
        reach_alice(&mut b);
        b.dirty.ranges.push((25, 25));
        let p = flush(&mut b);
        assert_eq!((sessions(&p), p.held), (vec![3], 1));

        b.release_held(t0, W, W);
        assert_eq!(b.next_release(), Some(until), "not due yet");
        b.release_held(until, W, W);
        assert_eq!(b.next_release(), None);
        let p = flush(&mut b);
        assert_eq!(
            (sessions(&p), p.held, p.me_reads.clone()),
            (vec![2], 0, vec![id("alice")]),
            "forced when its hold ended, with nothing else changed"
        );

        b.subs
            .get_mut(&(2, ViewKind::Me))
            .expect("in the fixture")
            .held = Some(until);
        b.dirty.any = true;
        b.dirty.resync = true;
        assert_eq!(sessions(&flush(&mut b)), [1, 2, 3]);
    }

    #[test]
    fn full_and_resync_reach_every_ready_view_but_not_one_still_subscribing() {
        let mut b = board();
        b.subs
            .get_mut(&(1, ViewKind::Top))
            .expect("in the fixture")
            .ready = false;
        b.dirty.any = true;
        b.dirty.resync = true;
        let p = flush(&mut b);
        assert!(p.resync);
        assert_eq!(sessions(&p), [2, 3]);
    }

    #[test]
    fn a_forced_view_is_recomputed_once() {
        let mut b = board();
        b.subs
            .get_mut(&(2, ViewKind::Me))
            .expect("in the fixture")
            .force = true;
        b.dirty.any = true;
        assert_eq!(sessions(&flush(&mut b)), [2]);
        b.dirty.any = true;
        assert!(matches!(plan_flush(&mut b, true), Planned::Nothing));
    }

    /// The fixture on an ordinal board in a known season, with one event pending: `mover`
    /// went from `old` to `new` at seq 2.
    fn derivable(mover: &str, old: Option<u64>, new: Option<u64>) -> Board {
        let mut b = board();
        b.ordinal = Some(true);
        b.season = Some("all".into());
        b.dirty.any = true;
        b.dirty.players.insert(id(mover));
        b.pending_seqs.push((2, 0));
        b.pending.push(Move {
            player: id(mover),
            score: Some(100),
            rank: new,
            previous_rank: old,
            name: None,
        });
        b
    }

    #[test]
    fn a_move_past_a_watcher_is_derived_without_a_read() {
        let mut b = derivable("carol", Some(60), Some(10));
        let p = flush(&mut b);
        assert_eq!(sessions(&p), [2]);
        assert!(
            p.me_reads.is_empty() && p.reads.is_empty(),
            "no read: {p:?}"
        );
        let alice = b.me.get(&id("alice")).expect("known");
        assert_eq!(
            (alice.rank, alice.previous_rank, alice.score, alice.at),
            (Some(51), Some(50), Some(5), Some(2))
        );
    }

    #[test]
    fn a_move_elsewhere_sends_nothing_and_the_standing_keeps_up() {
        let mut b = derivable("carol", Some(60), Some(55));
        assert!(matches!(plan_flush(&mut b, true), Planned::Nothing));
        assert_eq!(
            b.me.get(&id("alice")).and_then(|m| m.at),
            Some(2),
            "derived up to the event"
        );
    }

    /// While every `me` view is held (none forced, every standing known), a players' flush
    /// serves the other views and leaves the moves for later, deriving nothing; the flush after
    /// a hold ends derives every move kept, exactly.
    #[test]
    fn moves_wait_while_every_me_view_is_held_and_are_derived_once_one_is_not() {
        let mut b = derivable("carol", Some(60), Some(10));
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        hold_alice(&mut b, until);
        b.dirty.ranges = vec![(10, 60)];
        let p = flush(&mut b);
        assert_eq!(
            sessions(&p),
            [1, 3],
            "top and bob's window are reached, alice is held"
        );
        assert_eq!(b.pending.len(), 1, "the move is kept");
        assert_eq!(b.me.get(&id("alice")).and_then(|m| m.at), Some(1));
        assert_eq!(b.counts.me_derived, 0);

        b.dirty.any = true;
        b.pending_seqs.push((3, 1));
        b.pending.push(Move {
            player: id("carol"),
            score: Some(200),
            rank: Some(5),
            previous_rank: Some(10),
            name: None,
        });
        b.release_held(until, W, W);
        let p = flush(&mut b);
        assert_eq!(sessions(&p), [2], "released: visited");
        assert!(p.me_reads.is_empty(), "derived, not read: {p:?}");
        assert!(b.pending.is_empty());
        let alice = b.me.get(&id("alice")).expect("known");
        assert_eq!(
            (alice.rank, alice.previous_rank, alice.at),
            (Some(51), Some(50), Some(3)),
            "carol passed alice at seq 2, not at seq 3"
        );
    }

    #[test]
    fn a_standing_older_than_the_events_at_hand_is_read() {
        let mut b = derivable("carol", Some(60), Some(10));
        b.pending_seqs[0].0 = 5; // seqs 2..=4 were consumed without alice
        let p = flush(&mut b);
        assert_eq!(sessions(&p), [2]);
        assert_eq!(p.me_reads, vec![id("alice")]);
    }

    #[test]
    fn a_mover_that_disagrees_with_its_event_is_read() {
        let mut b = derivable("alice", Some(49), Some(3));
        let p = flush(&mut b);
        assert_eq!(p.me_reads, vec![id("alice")]);
    }

    /// `plan` only reads: the same board and changes plan the same flush twice, and the board's
    /// dirty state and forced views are left as they were.
    #[test]
    fn plan_changes_nothing() {
        let mut b = board();
        b.subs
            .get_mut(&(2, ViewKind::Me))
            .expect("in the fixture")
            .force = true;
        let c = Changes {
            ranges: vec![(3, 5)],
            ..Changes::default()
        };
        let one = plan(&b, &c).expect("top and the forced me");
        let two = plan(&b, &c).expect("the same");
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        assert_eq!(sessions(&one), [1, 2]);
        assert!(b.subs[&(2, ViewKind::Me)].force, "still forced");
        assert!(plan(&b, &Changes::default()).is_some(), "the forced view");
    }

    /// While the players' window has not elapsed only `top` is flushed, from a look at the
    /// dirty state: the state and the pending moves are left whole, and the `me` and `around`
    /// views the change reached are served when their window elapsed.
    #[test]
    fn player_views_wait_for_their_window_and_top_does_not() {
        let mut b = board();
        b.dirty.any = true;
        b.dirty.ranges = vec![(1, 60)];
        let p = match plan_flush(&mut b, false) {
            Planned::Flush(p) => p,
            other => panic!("expected a top flush, got {other:?}"),
        };
        assert_eq!(sessions(&p), [1]);
        assert!(p.players_later && p.me_reads.is_empty());
        assert_eq!(p.reads, vec![Want::Top]);
        assert!(
            b.dirty.any,
            "the dirty state is left for the players' flush"
        );
        assert_eq!(b.dirty.ranges, vec![(1, 60)]);
        assert_eq!(sessions(&flush(&mut b)), [1, 2, 3], "their window elapsed");
        assert!(matches!(plan_flush(&mut b, true), Planned::Nothing));
        // A change below every `top`: nothing to flush before the players' window.
        b.dirty.any = true;
        b.dirty.ranges = vec![(45, 60)];
        assert!(matches!(plan_flush(&mut b, false), Planned::Later));
        assert_eq!(
            sessions(&flush(&mut b)),
            [2],
            "alice's rank 50 is in 45..=60"
        );
    }

    #[test]
    fn top_reads_the_largest_limit_once() {
        let mut b = board();
        let outbox = Arc::new(Outbox::new(8));
        let mut s = Sub::new(View::Top { limit: 50 }, None, 4, outbox);
        s.ready = true;
        b.insert_sub((4, ViewKind::Top), s);
        b.dirty.any = true;
        b.dirty.full = true;
        let p = flush(&mut b);
        assert_eq!(p.top_limit, 50);
        assert_eq!(p.reads.iter().filter(|w| **w == Want::Top).count(), 1);
    }
}
