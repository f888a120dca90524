//! The per-board flush task. An event marks the board dirty and wakes its worker; the worker
//! waits out the coalescing window (at most one flush per `coalesce_ms`, so at most one message
//! per view per window, always the latest state), plans under the lock, reads outside it, and
//! offers the rendered messages under the lock again, a chunk of subscriptions at a time with the
//! thread yielded in between (`top` views first). Offering never awaits a socket.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use scorecast_shared::board::Ranking;
use scorecast_shared::protocol::ViewKind;
use scorecast_shared::{Entry, Id, View};
use tokio::time::Instant;

use super::around::{Kept, Window};
use super::board::{Board, BoardCell, SubKey};
use super::changes;
use super::derive::Standings;
use super::plan::{self, Plan, Planned, Want};
use super::render::{render, render_me, Built};
use super::window::{longest_window, next_hold, next_window, Flushed, Stretch};
use super::Inner;
use crate::error::AppResult;
use crate::metrics;
use crate::store::{Page, Read};

/// What a flush read.
struct Pages {
    views: HashMap<Want, Page>,
    /// The bulk read of the `me` standings that could not be derived.
    me: Option<Page>,
}

/// Subscriptions offered their messages per hold of the board's lock ([`Inner::offer`]).
const OFFER_CHUNK: usize = 256;

/// How often a board's worker reads its config again (whether its ranking is ordinal).
const CONFIG_EVERY: Duration = Duration::from_secs(1);

/// A flush whose reads failed (Redis down) is retried after this.
const FLUSH_RETRY: Duration = Duration::from_millis(250);

/// What the chunks of one flush's offer share (`Inner::offer`).
struct Offering<'a> {
    board: &'a Id,
    plan: &'a Plan,
    /// The season the messages are rendered for.
    season: String,
    /// The flush's `top` and `around` reads.
    views: HashMap<Want, Page>,
    /// Messages shared by several subscriptions (`top`, `around`), rendered once per flush.
    built: HashMap<(Want, u64), Built>,
    /// `around` windows sent from their kept rows (`around.rs`), with no read.
    derived_pages: HashMap<Want, Page>,
    flushed: Flushed,
    /// How long after an update that went with its ack a `me` view is held back
    /// ([`next_hold`]).
    hold: Duration,
}

/// Flushes one board's views until the registry dropped its cell, taking only the board's own
/// lock: `top` views at most once per `coalesce_ms`, `me` and `around` views at most once per
/// players' window (at least `coalesce_ms`: see [`next_window`]).
pub(super) async fn run(inner: Arc<Inner>, board: Id, cell: Arc<BoardCell>) {
    let wake = cell.wake.clone();
    let coalesce = Duration::from_millis(inner.ws.coalesce_ms);
    let mut pace = Pace::new(coalesce);
    let mut last_flush: Option<Instant> = None;
    let mut last_players: Option<Instant> = None;
    // `me` or `around` views were left for when their window elapses.
    let mut players_later = false;
    let mut config_read: Option<Instant> = None;
    // The views held again when their hold ended (an ack's update came meanwhile), counted
    // into the next players' flush as if it had visited them.
    let mut held_again = Flushed::default();
    loop {
        // Standings are derived from events only on ordinal boards. A board's ranking can be
        // changed by an admin without an event, so the config is read again at most once per
        // CONFIG_EVERY, before a flush; until it is read (or if it cannot be) standings are read.
        // Woken by an event, when the players' window elapses (if views were left for it), and
        // when the first hold of a `me` view ends.
        let players = last_players
            .filter(|_| players_later)
            .map(|t| t + pace.players_wait);
        let release = cell.lock().next_release().map(Instant::from_std);
        match players.into_iter().chain(release).min() {
            Some(t) => {
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep_until(t) => {}
                }
            }
            None => wake.notified().await,
        }
        if let Some(t) = last_flush {
            tokio::time::sleep_until(t + coalesce).await;
        }
        if config_read.is_none_or(|t| t.elapsed() >= CONFIG_EVERY) {
            config_read = Some(Instant::now());
            inner.check_ranking(&board, &cell).await;
        }
        let started = Instant::now();
        let players_due = last_players.is_none_or(|t| started >= t + pace.players_wait);
        let planned = {
            let mut b = cell.lock();
            held_again += b.release_held(started.into_std(), coalesce, pace.hold);
            changes::plan_flush(&mut b, players_due)
        };
        let plan = match planned {
            Planned::Gone => return,
            Planned::Nothing | Planned::Later => {
                players_later = matches!(planned, Planned::Later);
                if players_due && held_again.me > 0 {
                    // Nothing to send, but holds were renewed: they count as this players'
                    // flush's visits, and the window and the hold adapt to them as after one.
                    last_players = Some(started);
                    let flushed = std::mem::take(&mut held_again);
                    pace.after_players(flushed, started.elapsed(), started, &inner, &cell);
                }
                continue;
            }
            Planned::Flush(p) => p,
        };
        let planned = started.elapsed();
        players_later = plan.players_later;
        last_flush = Some(started);
        if players_due {
            last_players = Some(started);
        }
        match inner.read_plan(&board, &plan).await {
            Ok(pages) => {
                let mut flushed = inner.offer(&board, &cell, plan, pages, pace.hold).await;
                if players_due {
                    flushed += std::mem::take(&mut held_again);
                    let busy = planned + flushed.busy;
                    pace.after_players(flushed, busy, started, &inner, &cell);
                }
            }
            Err(e) => {
                tracing::debug!(%board, error = %e, "view flush failed; retrying");
                mark_dirty_again(&cell, &plan);
                tokio::time::sleep(FLUSH_RETRY).await;
                wake.notify_one();
            }
        }
    }
}

/// A board's players' window and hold, adapted after each of its players' flushes
/// (`window.rs`).
struct Pace {
    coalesce: Duration,
    window: Duration,
    max_window: Duration,
    /// The wait before the next flush of players' views: `window`, or longer when the
    /// instance's push budget asks for it (`budget.rs`), never over `max_window`.
    players_wait: Duration,
    /// Why `window` is stretched (the cause of its last doubling), while it is.
    stretched_by: Option<Stretch>,
    /// How long a `me` view is held back after an update that went with its ack.
    hold: Duration,
}

impl Pace {
    fn new(coalesce: Duration) -> Pace {
        Pace {
            coalesce,
            window: coalesce,
            max_window: longest_window(coalesce),
            players_wait: coalesce,
            stretched_by: None,
            hold: coalesce,
        }
    }

    /// After a players' flush that did `flushed`, its own work taking `busy`: the next window
    /// (within the instance's push budget) and hold, published on the board's cell for
    /// `/metrics`.
    fn after_players(
        &mut self,
        flushed: Flushed,
        busy: Duration,
        started: Instant,
        inner: &Inner,
        cell: &BoardCell,
    ) {
        let (w, mut cause) = next_window(self.window, self.coalesce, flushed, busy);
        self.window = w;
        let owed = inner.budget.spend(flushed.sent, started);
        self.players_wait = w.max(owed).min(self.max_window);
        if self.players_wait > w {
            cause = Some(Stretch::PushBudget);
        }
        if let Some(c) = cause {
            metrics::VIEWS_STRETCHED
                .with_label_values(&[c.label()])
                .inc();
            self.stretched_by = Some(c);
        }
        if self.players_wait <= self.coalesce {
            self.stretched_by = None;
        }
        cell.set_window(self.players_wait, self.stretched_by);
        self.hold = next_hold(
            self.hold,
            self.players_wait,
            self.coalesce,
            self.max_window,
            flushed,
        );
        cell.set_hold(self.hold);
    }
}

impl Inner {
    /// Reads whether the board ranks ordinally; a change (or the first read) makes every view
    /// recomputed and every `me` standing read again.
    async fn check_ranking(&self, board: &Id, cell: &BoardCell) {
        let ordinal = match self.store.board(board).await {
            Ok(cfg) => Some(matches!(cfg.ranking, Ranking::Ordinal)),
            Err(e) => {
                tracing::debug!(%board, error = %e, "board config unreadable; reading every `me` view");
                None
            }
        };
        let mut b = cell.lock();
        // Also on the first read: the snapshots may have been taken under another ranking.
        if b.ordinal != ordinal {
            b.forget_standings();
            b.mark_all_dirty();
        }
        b.ordinal = ordinal;
    }

    /// Does the plan's reads, concurrently (one round trip): the `top` read, one bulk read of
    /// every `around` window, and one bulk read of every `me` standing that could not be derived.
    async fn read_plan(&self, board: &Id, plan: &Plan) -> AppResult<Pages> {
        let store = &self.store;
        let top = async {
            if !plan.reads.contains(&Want::Top) {
                return Ok(None);
            }
            store
                .read(board, None, Want::Top.read(plan.top_limit))
                .await
                .map(Some)
        };
        let arounds: Vec<(&Id, u64)> = plan
            .reads
            .iter()
            .filter_map(|w| match w {
                Want::Around(p, r) => Some((p, *r)),
                _ => None,
            })
            .collect();
        let around = async {
            if arounds.is_empty() {
                return Ok(Vec::new());
            }
            store.read_arounds(board, &arounds).await
        };
        let me = async {
            if plan.me_reads.is_empty() {
                return Ok(None);
            }
            store
                .read(board, None, Read::Players(&plan.me_reads))
                .await
                .map(Some)
        };
        let (top, around, me) = tokio::try_join!(top, around, me)?;
        let mut views: HashMap<Want, Page> = around
            .into_iter()
            .zip(&arounds)
            .map(|(page, (p, r))| (Want::Around((*p).clone(), *r), page))
            .collect();
        if let Some(page) = top {
            views.insert(Want::Top, page);
        }
        Ok(Pages { views, me })
    }

    /// Offers the flush's messages to the subscriptions it was planned for, `top` views first,
    /// [`OFFER_CHUNK`] subscriptions at a time: the board's lock is released and the thread
    /// yielded between chunks, so a flush of 10 000 watchers never holds up the connections,
    /// the submissions or the other boards for its whole length. Each chunk renders from the
    /// standings this flush derived (a later event only marks the board dirty again) and finds
    /// its subscriptions again (one dropped meanwhile is skipped).
    async fn offer(
        &self,
        board: &Id,
        cell: &BoardCell,
        mut plan: Plan,
        pages: Pages,
        hold: Duration,
    ) -> Flushed {
        let Some(season) = self.take_pages(board, cell, &plan, &pages) else {
            return Flushed::default();
        };
        let targets = std::mem::take(&mut plan.targets);
        let mut o = Offering {
            board,
            plan: &plan,
            season,
            views: pages.views,
            built: HashMap::new(),
            derived_pages: HashMap::new(),
            // The views skipped as held count among the flush's `me` views (`next_hold`).
            flushed: Flushed {
                me: plan.held,
                held: plan.held,
                acked: plan.held,
                ..Flushed::default()
            },
            hold,
        };
        by_chunks(&top_first(targets), OFFER_CHUNK, |chunk| {
            let started = Instant::now();
            let mut b = cell.lock();
            if b.gone {
                return ControlFlow::Break(());
            }
            self.offer_chunk(&mut o, &mut b, chunk);
            drop(b);
            o.flushed.busy += started.elapsed();
            ControlFlow::Continue(())
        })
        .await;
        let flushed = o.flushed;
        metrics::DEFERRED.inc_by(flushed.deferred);
        let mut b = cell.lock();
        b.counts.deferred += flushed.deferred;
        b.counts.pushed += flushed.sent;
        if flushed.deferred > 0 {
            b.dirty.any = true;
            b.wake.notify_one();
        }
        flushed
    }

    /// The flush's reads taken in (under the board's lock): the `seq` checked, the `me`
    /// standings read learnt. Returns the season to render for (`None`: nothing to offer).
    fn take_pages(
        &self,
        board: &Id,
        cell: &BoardCell,
        plan: &Plan,
        pages: &Pages,
    ) -> Option<String> {
        let me_page = pages.me.as_ref();
        let mut guard = cell.lock();
        let b = &mut *guard;
        if b.gone {
            return None;
        }
        let (lowest, highest) = pages
            .views
            .values()
            .chain(me_page)
            .map(|p| p.seq)
            .fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
        if !plan.resync && lowest < plan.high_seq {
            tracing::warn!(%board, seq = lowest, known = plan.high_seq, "seq went backwards: Redis lost its data; resyncing");
            b.mark_resync();
            return None;
        }
        b.high_seq = b.high_seq.max(highest);
        if let Some(p) = pages.views.values().chain(me_page).next() {
            b.season = Some(p.season.clone());
        }
        if let Some(page) = me_page {
            metrics::ME_STANDINGS
                .with_label_values(&["read"])
                .inc_by(plan.me_reads.len() as u64);
            b.counts.me_read += plan.me_reads.len() as u64;
            let found: HashMap<&str, &Entry> = page
                .entries
                .iter()
                .map(|e| (e.player.as_str(), e))
                .collect();
            for p in &plan.me_reads {
                let e = found.get(p.as_str());
                b.me.learn(p, e.map(|e| e.score), e.map(|e| e.rank), page.seq);
            }
        }
        if let Some(lost) = plan.me_known {
            // Every watcher's unknown standing was read by this flush.
            b.me.mark_known(lost);
        }
        b.season.clone()
    }

    /// Offers one chunk of the flush's subscriptions their messages (under the board's lock).
    fn offer_chunk(&self, o: &mut Offering<'_>, b: &mut Board, chunk: &[(SubKey, u64)]) {
        let Offering {
            board,
            plan,
            season,
            views,
            built,
            derived_pages,
            flushed,
            hold,
        } = o;
        let board: &Id = board;
        // Sized for every target of the chunk: grown from empty it would rehash a few times.
        let mut built_me: foldhash::HashMap<&Id, Built> =
            foldhash::HashMap::with_capacity_and_hasher(chunk.len(), Default::default());
        // `top` and `around` renders never touch standings (`me` views render from `b.me`).
        let mut no_standings = Standings::default();
        let ordinal = b.ordinal == Some(true);
        let Board {
            subs,
            forced,
            held,
            me_active,
            me,
            counts,
            ..
        } = b;
        let window = Duration::from_millis(self.ws.coalesce_ms);
        let behind_after = 2 * window;
        let longest = longest_window(window);
        let now = std::time::Instant::now();
        for (key, gen) in chunk {
            let key = *key;
            let Some(sub) = subs.get_mut(&key).filter(|s| s.gen == *gen) else {
                continue;
            };
            let msg = match (sub.view, sub.player.as_ref()) {
                (View::Me, Some(p)) => {
                    flushed.me += 1;
                    if sub.acked_within(now, longest) {
                        flushed.acked += 1;
                    }
                    // Held back for the player's ack to carry it (`Sub::held_until`): skipped
                    // by the flushes until the hold ends (`Board::release_held`).
                    if let Some(until) = sub.held_until(now, window, *hold).filter(|_| !plan.resync)
                    {
                        if sub.held.replace(until) != Some(until) {
                            held.push(until, key.0);
                            me_active.remove(&key.0);
                        }
                        flushed.held += 1;
                        continue;
                    }
                    let since = sub.outbox.view_pending_since(board, key.1);
                    if !plan.resync && since.is_some_and(|t| now.duration_since(t) >= behind_after)
                    {
                        // The writer has not taken this view's update of two windows ago:
                        // a newer one would only replace it, rendered for nothing (at 10 000
                        // watchers most of them were). It is rendered at a next flush instead,
                        // from the standing then, once the writer caught up.
                        sub.force = true;
                        forced.insert(key);
                        flushed.deferred += 1;
                        continue;
                    }
                    let Some((player, standing)) = me.get_key_value(p) else {
                        continue;
                    };
                    let Some(at) = standing.at else { continue };
                    // Already sent at this `seq` or later (with its ack, `commit.rs`): no news,
                    // whatever it would say, so it is not rendered.
                    if !plan.resync && at <= sub.last_seq {
                        continue;
                    }
                    built_me.entry(player).or_insert_with(|| {
                        render_me(board, player, &standing, season, at, plan.resync)
                    })
                }
                _ => {
                    let Some(want) = Want::of(sub.view, sub.player.as_ref()) else {
                        continue;
                    };
                    let rows = plan::rows(sub.view);
                    match (views.get(&want), &mut sub.kept, &want) {
                        (Some(page), kept, Want::Around(p, radius)) => {
                            // A window read on an ordinal board is kept, and derived from then on.
                            metrics::AROUND_WINDOWS.with_label_values(&["read"]).inc();
                            counts.around_read += 1;
                            *kept = ordinal
                                .then(|| Window::from_page(p, *radius, page))
                                .flatten()
                                .map(|window| Kept {
                                    window,
                                    at: page.seq,
                                });
                        }
                        (None, Some(k), Want::Around(..)) => {
                            derived_pages
                                .entry(want.clone())
                                .or_insert_with(|| k.window.page(season, k.at));
                        }
                        _ => {}
                    }
                    let Some(page) = views.get(&want).or_else(|| derived_pages.get(&want)) else {
                        continue;
                    };
                    built
                        .entry((want, rows))
                        .or_insert_with_key(|(want, rows)| {
                            render(board, want, *rows, page, &mut no_standings, plan.resync)
                        })
                }
            };
            sub.window = msg.window.or(sub.window);
            if plan.resync || sub.is_news(msg.hash, msg.seq) {
                let owed = sub.ack_owed;
                sub.sent(msg.hash, msg.seq, now, owed);
                sub.outbox.offer_view(board, key.1, msg.text.clone());
                crate::metrics::PUSHES.inc();
                if !matches!(sub.view, View::Top { .. }) {
                    flushed.sent += 1;
                }
            }
        }
    }
}

/// The order a flush offers its subscriptions in: `top` views first (spectators are the last
/// to wait), then the players' views.
fn top_first(targets: Vec<(SubKey, u64)>) -> Vec<(SubKey, u64)> {
    let (mut top, players): (Vec<_>, Vec<_>) = targets
        .into_iter()
        .partition(|((_, kind), _)| *kind == ViewKind::Top);
    top.extend(players);
    top
}

/// Runs `each` over `items`, `size` at a time, yielding the thread between two chunks so that
/// the connections, the submissions and the other boards' flushes get their turn; stops when
/// `each` answers `Break`.
async fn by_chunks<T>(items: &[T], size: usize, mut each: impl FnMut(&[T]) -> ControlFlow<()>) {
    for (i, chunk) in items.chunks(size).enumerate() {
        if i > 0 {
            tokio::task::yield_now().await;
        }
        if each(chunk).is_break() {
            break;
        }
    }
}

/// A flush failed: its views are to be recomputed at the next one.
fn mark_dirty_again(cell: &BoardCell, plan: &Plan) {
    let mut b = cell.lock();
    b.dirty.any = true;
    b.dirty.full = true;
    b.dirty.resync |= plan.resync;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flush offers `top` views first, then the players' views, each subscription once.
    #[test]
    fn a_flush_offers_top_views_first() {
        let kinds = [ViewKind::Me, ViewKind::Around, ViewKind::Top];
        let targets: Vec<(SubKey, u64)> = (0..100u64)
            .map(|i| ((i, kinds[i as usize % 3]), i))
            .collect();
        let order = top_first(targets.clone());
        let tops = targets
            .iter()
            .filter(|((_, k), _)| *k == ViewKind::Top)
            .count();
        assert!(order[..tops].iter().all(|((_, k), _)| *k == ViewKind::Top));
        assert!(order[tops..].iter().all(|((_, k), _)| *k != ViewKind::Top));
        let mut sorted = order.clone();
        sorted.sort_unstable_by_key(|t| t.1);
        assert_eq!(sorted, targets, "each subscription once");
    }

    /// Chunks are at most `size` long, another task runs between two of them, and a `Break`
    /// stops the rest.
    #[tokio::test(flavor = "current_thread")]
    async fn chunks_yield_the_thread_between_them_and_stop_on_break() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let turns = Arc::new(AtomicUsize::new(0));
        let other = tokio::spawn({
            let turns = turns.clone();
            async move {
                loop {
                    turns.fetch_add(1, SeqCst);
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut seen: Vec<(Vec<u32>, usize)> = Vec::new();
        by_chunks(&[1, 2, 3, 4, 5, 6, 7], 3, |chunk| {
            seen.push((chunk.to_vec(), turns.load(SeqCst)));
            if chunk[0] == 4 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await;
        other.abort();
        let chunks: Vec<&[u32]> = seen.iter().map(|(c, _)| c.as_slice()).collect();
        assert_eq!(chunks, [&[1, 2, 3][..], &[4, 5, 6][..]], "stopped before 7");
        assert!(
            seen[1].1 > seen[0].1,
            "another task ran between two chunks: {seen:?}"
        );
    }
}
