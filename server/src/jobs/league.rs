//! `league.close`: the end of one season of a league (`docs/queues.md`). Scheduled at the
//! season's end; its steps, each safe to run again:
//!
//! 1. **Moves** — computed from the ended season's buckets on every tier (frozen: nothing writes
//!    a season once it ended) and stored once (`SET NX`); a re-run reads the stored ones, so it
//!    applies the same moves whatever changed since.
//! 2. **Apply** — one script per tier board (`lua/league_apply.lua`, the board's own slot):
//!    absolute writes (the board each moved player plays on now) and a per-tier done marker.
//! 3. **Told, closed** — unless the season is closed already: a `notify` job per moved player
//!    (ids derived from the league, season and player), then the league's closed marker; then
//!    the next season's `league.close`.
//!
//! A worker that dies between any two steps leaves the job to be claimed again: the re-run
//! skips what is done and ends in the state one clean run leaves.

use scorecast_shared::{ErrorCode, Id};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{app, calendar_season, enqueue_once, job_id, kind, queue, NotifyPayload};
use crate::error::{AppError, AppResult};
use crate::queue::NewJob;
use crate::state::AppState;
use crate::store::{LeagueConfig, Move, Moves};

pub const KIND_LEAGUE_CLOSE: &str = "league.close";
/// The `kind` of the `notify` message a move sends.
pub const NOTIFY_LEAGUE: &str = "league";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeagueClosePayload {
    pub league: String,
    /// The season that ends.
    pub season: String,
    pub end_ms: i64,
}

/// Schedules the `league.close` job of the season of `league` containing `at_ms`, at its end
/// (once: the job id names the league and season). Returns the id if scheduled now.
pub async fn schedule_close(
    st: &AppState,
    league: &Id,
    cfg: &LeagueConfig,
    at_ms: i64,
) -> AppResult<Option<Id>> {
    let Some((season, _, end_ms)) = calendar_season(cfg.reset, at_ms) else {
        return Ok(None);
    };
    let id = job_id("league.close", &[league.as_str(), &season]);
    let payload = LeagueClosePayload {
        league: league.to_string(),
        season,
        end_ms,
    };
    let job = NewJob::new(&kind(KIND_LEAGUE_CLOSE), &payload)?
        .id(id.clone())
        .priority(0)
        .at(end_ms);
    Ok(enqueue_once(&queue(st), job).await?.then_some(id))
}

/// The season of a league that ended last before `now_ms`: the one before the current calendar
/// season (`None` for a league without a calendar).
pub fn last_ended_season(cfg: &LeagueConfig, now_ms: i64) -> Option<String> {
    let (_, start, _) = calendar_season(cfg.reset, now_ms)?;
    calendar_season(cfg.reset, start - 1).map(|(name, _, _)| name)
}

/// Step 1: the moves of the season, from its frozen standings: in each bucket of tier `i`, the
/// first `promote` move up (on the top tier they stay) and, of the players ranked below them,
/// the last `relegate` move down (on the lowest tier they stay). So a bucket's first `promote`
/// never move down, even on the top tier or in a small bucket. Deterministic: the same
/// standings give the same moves, in tier, bucket and rank order.
pub async fn compute_moves(
    st: &AppState,
    league: &Id,
    cfg: &LeagueConfig,
    season: &str,
) -> AppResult<Moves> {
    let tiers = cfg.validate().map_err(AppError::bad_request)?;
    let standings = futures_util::future::try_join_all(
        tiers.iter().map(|t| st.store.bucket_standings(t, season)),
    )
    .await?;
    let top = tiers.len() - 1;
    let mut moves = Vec::new();
    for (i, buckets) in standings.iter().enumerate() {
        for (b, players) in buckets.iter().enumerate() {
            let n = players.len();
            let first = (cfg.promote as usize).min(n);
            let up = if i < top { first } else { 0 };
            let down = if i > 0 {
                (cfg.relegate as usize).min(n - first)
            } else {
                0
            };
            let mut push = |r: usize, to: usize, direction: &str| {
                moves.push(Move {
                    player: players[r].clone(),
                    from: cfg.tiers[i].clone(),
                    from_tier: i as u32,
                    to: cfg.tiers[to].clone(),
                    to_tier: to as u32,
                    direction: direction.to_owned(),
                    bucket: b as u32 + 1,
                    rank: r as u64 + 1,
                });
            };
            for r in 0..up {
                push(r, i + 1, "up");
            }
            for r in n - down..n {
                push(r, i - 1, "down");
            }
        }
    }
    Ok(Moves {
        league: league.to_string(),
        season: season.to_owned(),
        computed_ms: st.queues.clock().now_ms(),
        closed_ms: None,
        moves,
    })
}

/// Step 1 as the job does it: the stored moves of the season, else computed and stored (the
/// first stored win).
pub async fn record_moves(
    st: &AppState,
    league: &Id,
    cfg: &LeagueConfig,
    season: &str,
) -> AppResult<Moves> {
    if let Some(m) = st.store.moves(league, season).await? {
        return Ok(m);
    }
    let computed = compute_moves(st, league, cfg, season).await?;
    st.store.record_moves(league, &computed).await
}

/// Step 2 on tier `i`: the moves leaving or entering it, applied once. Whether this call
/// applied them (`false`: done before).
pub async fn apply_tier(
    st: &AppState,
    cfg: &LeagueConfig,
    moves: &Moves,
    i: usize,
    next_season: &str,
) -> AppResult<bool> {
    let tier = Id::parse(&cfg.tiers[i])?;
    let touching: Vec<(&str, &str)> = moves
        .moves
        .iter()
        .filter(|m| m.from == cfg.tiers[i] || m.to == cfg.tiers[i])
        .map(|m| (m.player.as_str(), m.to.as_str()))
        .collect();
    st.store
        .apply_moves(&tier, &moves.season, next_season, &touching)
        .await
}

/// The whole job.
pub(super) async fn close(st: &AppState, p: LeagueClosePayload) -> anyhow::Result<()> {
    let league = Id::parse(&p.league)?;
    let cfg = match st.store.league(&league).await {
        Ok(cfg) => cfg,
        Err(e) if e.code == ErrorCode::NotFound => {
            tracing::info!(%league, "league.close of a league that is gone: nothing to do");
            return Ok(());
        }
        Err(e) => return Err(app(e)),
    };
    let now = st.queues.clock().now_ms();
    if now < p.end_ms {
        // Its standings are not frozen yet: only once the season ended.
        anyhow::bail!(
            "season {} of league {league} ends at {}",
            p.season,
            p.end_ms
        );
    }
    let moves = record_moves(st, &league, &cfg, &p.season)
        .await
        .map_err(app)?;
    let (next_season, _, _) = calendar_season(cfg.reset, p.end_ms)
        .ok_or_else(|| anyhow::anyhow!("league {league} has no calendar"))?;
    for i in 0..cfg.tiers.len() {
        apply_tier(st, &cfg, &moves, i, &next_season)
            .await
            .map_err(app)?;
    }
    if moves.closed_ms.is_none() {
        // Told before the league is marked closed: a run after a complete one tells nobody
        // again (a worker that dies between the two tells the players whose push already
        // went out a second time: at least once across that crash).
        notify_moves(st, &moves).await.map_err(app)?;
        // Now, once every tier has them: never before the moves were computed.
        let closed = st.queues.clock().now_ms();
        st.store
            .mark_closed(&league, &p.season, closed)
            .await
            .map_err(app)?;
        tracing::info!(%league, season = %p.season, moves = moves.moves.len(), "league season closed");
    }
    schedule_close(st, &league, &cfg, p.end_ms)
        .await
        .map_err(app)?;
    Ok(())
}

/// A `notify` job (kind `league`) for each moved player, once per player and season.
async fn notify_moves(st: &AppState, moves: &Moves) -> AppResult<()> {
    let q = queue(st);
    let mut jobs = Vec::with_capacity(moves.moves.len());
    for m in &moves.moves {
        let notify = NotifyPayload {
            player: m.player.clone(),
            kind: NOTIFY_LEAGUE.into(),
            payload: json!({
                "league": moves.league,
                "season": moves.season,
                "direction": m.direction,
                "from": m.from,
                "from_tier": m.from_tier,
                "to": m.to,
                "to_tier": m.to_tier,
                "bucket": m.bucket,
                "rank": m.rank,
            }),
        };
        let id = job_id("notify.league", &[&moves.league, &moves.season, &m.player]);
        jobs.push(
            NewJob::new(&kind(super::KIND_NOTIFY), &notify)?
                .id(id)
                .priority(1),
        );
    }
    // 64 at a time on the multiplexed connection (each is one script call).
    let mut jobs = jobs.into_iter().peekable();
    while jobs.peek().is_some() {
        let chunk: Vec<NewJob> = jobs.by_ref().take(64).collect();
        futures_util::future::try_join_all(chunk.into_iter().map(|j| enqueue_once(&q, j))).await?;
    }
    Ok(())
}
