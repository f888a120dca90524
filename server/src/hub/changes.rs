//! What a flush takes from its board before planning, under the board's lock: the dirty state
//! since the last flush, the `me` standings derived from the events (`derive.rs`), the `around`
//! windows kept up to date from them (`around.rs`). Everything that changes the board, counts
//! metrics or logs happens here; [`super::plan::plan`] then only reads.

use super::board::{Board, Sub};
use super::derive::Move;
use super::plan::{self, merge_ranges, Changes, Planned};
use crate::metrics;

/// The most moves kept underived while no `me` view needs a standing ([`take`]): a bound on the
/// memory they hold and on the work of the pass that derives them.
const DEFERRED_MOVES: usize = 16_384;

/// Takes the board's changes and plans its flush: [`Planned::Gone`] once the registry dropped
/// the board, [`Planned::Nothing`] when no view is reached. The views planned for are no longer
/// forced (they are recomputed by this flush). When `players_due` is false (the players' window
/// is stretched and has not elapsed: `worker.rs`), only `top` views are flushed, planned from a
/// look at the dirty state, which is left whole (moves, ranges) for the flush that serves the
/// `me` and `around` views ([`plan::Plan::players_later`]; [`Planned::Later`] when no `top`
/// view is reached).
pub(super) fn plan_flush(b: &mut Board, players_due: bool) -> Planned {
    if b.gone {
        return Planned::Gone;
    }
    // A resync or a full recompute is never split: every view goes in one flush.
    let players_due = players_due || b.dirty.full || b.dirty.resync;
    if !players_due {
        // Only `top`, from a look at the dirty state: the state, the pending moves and the
        // derivation are left whole for the players' flush (no `me` view is visited here).
        if !b.dirty.any {
            return Planned::Nothing;
        }
        let Some(plan) = plan::plan_top(b) else {
            return Planned::Later;
        };
        for (key, _) in &plan.targets {
            if let Some(s) = b.subs.get_mut(key) {
                s.force = false;
            }
        }
        return Planned::Flush(plan);
    }
    let Some(c) = take(b) else {
        return Planned::Nothing;
    };
    let Some(plan) = plan::plan(b, &c) else {
        return Planned::Nothing;
    };
    for (key, _) in &plan.targets {
        if let Some(s) = b.subs.get_mut(key) {
            s.force = false;
        }
    }
    let subs = &b.subs;
    b.forced.retain(|k| subs.get(k).is_some_and(|s| s.force));
    Planned::Flush(plan)
}

/// Takes the dirty state (`None`: nothing changed) and brings the derived standings and kept
/// windows up to the events at hand.
fn take(b: &mut Board) -> Option<Changes> {
    if !b.dirty.any {
        return None;
    }
    let mut dirty = std::mem::take(&mut b.dirty);
    let moves = std::mem::take(&mut b.pending);
    let seqs = std::mem::take(&mut b.pending_seqs);
    let ranges = merge_ranges(std::mem::take(&mut dirty.ranges));
    // `me` from the change stream where exact: ordinal boards, in a known season, when no event
    // was lost and nothing asks for everything to be read.
    let derive = b.ordinal == Some(true) && b.season.is_some() && !dirty.full && !dirty.resync;
    // No `me` view to show a standing to (every watcher held, none forced, every standing
    // known): the moves wait, up to [`DEFERRED_MOVES`] of them, for a flush that has one. When
    // every watcher keeps submitting (their acks bring their ranks), that is one pass over the
    // standings per so many moves instead of one per flush.
    let defer = derive && !b.me.is_empty() && !b.me_wanted() && moves.len() < DEFERRED_MOVES;
    if derive && !defer {
        let d = b.me.derive(&moves, &seqs);
        if d.inconsistent {
            tracing::warn!("a derived rank disagreed with its event; reading the standings");
        }
        metrics::ME_STANDINGS
            .with_label_values(&["derived"])
            .inc_by(d.derived);
        b.counts.me_derived += d.derived;
    }
    let mut arounds = foldhash::HashMap::default();
    let all = dirty.full || dirty.resync;
    // Kept windows are `around` views': among the `top` and `around` ones, not every view.
    for key in &b.others {
        let Some(sub) = b.subs.get_mut(key).filter(|s| s.ready && s.kept.is_some()) else {
            continue;
        };
        let exact = derive && !all && !sub.force;
        if let Some(changed) = keep_around(sub, exact, &moves, &seqs) {
            if changed {
                metrics::AROUND_WINDOWS
                    .with_label_values(&["derived"])
                    .inc();
                b.counts.around_derived += 1;
            }
            arounds.insert(*key, changed);
        }
    }
    if defer {
        // Already applied to the kept windows: each skips what it has seen, by `seq`.
        b.pending = moves;
        b.pending_seqs = seqs;
    }
    Some(Changes {
        dirty,
        ranges,
        derive,
        arounds,
    })
}

/// Brings an `around` view's kept window up to the events at hand, when `derive` allows:
/// `Some(changed)` when it is kept up to date (and whether a row changed), `None` when it is not
/// kept (a move made it inexact, or it missed events: it is forgotten, read if a change reaches
/// it).
fn keep_around(sub: &mut Sub, derive: bool, moves: &[Move], seqs: &[(u64, usize)]) -> Option<bool> {
    let Some(k) = sub.kept.as_mut().filter(|_| derive) else {
        sub.kept = None;
        return None;
    };
    let (Some(&(first, _)), Some(&(last, _))) = (seqs.first(), seqs.last()) else {
        return Some(false);
    };
    if k.at + 1 < first {
        // Events were consumed without it: stale.
        sub.kept = None;
        return None;
    }
    let Some(&(_, start)) = seqs.get(seqs.partition_point(|e| e.0 <= k.at)) else {
        return Some(false);
    };
    match k.window.apply(&moves[start..]) {
        Ok(changed) => {
            k.at = k.at.max(last);
            Some(changed)
        }
        Err(_) => {
            sub.kept = None;
            None
        }
    }
}
