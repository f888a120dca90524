//! What a flush takes from its board before planning, under the board's lock: the dirty state
//! since the last flush, the `me` standings derived from the events (`derive.rs`), the `around`
//! windows kept up to date from them (`around.rs`). Everything that changes the board, counts
//! metrics or logs happens here; [`super::plan::plan`] then only reads.

use super::board::{Board, Sub};
use super::derive::Move;
use super::plan::{self, merge_ranges, Changes, Planned, Want};
use crate::metrics;
use scorecast_shared::protocol::ViewKind;

/// Takes the board's changes and plans its flush: [`Planned::Gone`] once the registry dropped
/// the board, [`Planned::Nothing`] when no view is reached. The views planned for are no longer
/// forced (they are recomputed by this flush). When `players_due` is false (the players' window
/// is stretched and has not elapsed: `worker.rs`), only `top` views are flushed; the `me` and
/// `around` views the changes reached are forced for the flush that serves them (the plan says
/// [`plan::Plan::players_later`], or [`Planned::Later`] when nothing else is to be flushed).
pub(super) fn plan_flush(b: &mut Board, players_due: bool) -> Planned {
    if b.gone {
        return Planned::Gone;
    }
    let Some(c) = take(b) else {
        return Planned::Nothing;
    };
    let Some(mut plan) = plan::plan(b, &c) else {
        return Planned::Nothing;
    };
    if !players_due {
        let before = plan.targets.len();
        plan.targets.retain(|(key, _)| {
            let top = key.1 == ViewKind::Top;
            if !top {
                b.force(*key);
            }
            top
        });
        plan.players_later = plan.targets.len() < before;
        // The forced views make the board dirty for the flush that serves them (the worker
        // wakes for it when their window elapses).
        b.dirty.any |= plan.players_later;
        plan.me_reads.clear();
        plan.me_known = None;
        plan.reads.retain(|w| *w == Want::Top);
        if plan.targets.is_empty() {
            return Planned::Later;
        }
    }
    for (key, _) in &plan.targets {
        if let Some(s) = b.subs.get_mut(key) {
            s.force = false;
        }
    }
    if players_due {
        let subs = &b.subs;
        b.forced.retain(|k| subs.get(k).is_some_and(|s| s.force));
    }
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
    if derive {
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
    for (key, sub) in b.subs.iter_mut() {
        if !sub.ready || sub.kept.is_none() {
            continue;
        }
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
