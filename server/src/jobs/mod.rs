//! Scorecast's own jobs, on its own queue `scorecast` (README, "Job queues"):
//!
//! - `season.rollover` — scheduled at the end of each season of a calendar board (`reset`
//!   daily/weekly/monthly). Seasons themselves turn over inside the submission script by the
//!   clock, so the boundary is exact even when this job runs late; the job only does the
//!   after-season work: a `reward.grant` job for each of the finished season's `rewards_top`
//!   players (better rank, more urgent priority; equal priorities in rank order), then it
//!   schedules the next rollover.
//! - `reward.grant` — records the grant in `lb:{<board>}:rewards` (`<season>:<player>` →
//!   record) with HSETNX, so a job that runs twice grants once; a new grant enqueues a `notify`
//!   job.
//! - `notify` — pushes `{"type":"notify","kind","payload"}` to the player's open WebSockets
//!   through a [`Notifier`] (the WebSocket hub in production), on every instance: the job is
//!   acked only once the notification was published, so a failed publish is retried.
//!
//! - `tournament.end` — scheduled at the `end_ms` of a one-off tournament (`schedule` with
//!   `start_ms`, `end_ms`): freezes the final standings (`lua/tournament_end.lua`, once) and
//!   enqueues the `reward.grant` jobs of its `rewards_top` players, as a rollover does. A
//!   recurring tournament ends with each season: its `season.rollover` freezes the standings
//!   first, and the next season is the next occurrence.
//! - `tournament.event` — scheduled at a one-off tournament's `start_ms` (`started`) and
//!   `ending_soon_ms` before its `end_ms` (`ending_soon`), and at each season's `ending_soon`
//!   of a recurring one: tells the board's subscribers on every instance
//!   (`lua/tournament_event.lua`). The `ended` event comes with the freeze; a recurring
//!   tournament's `started` with the rollover that ended the previous occurrence.
//!
//! - `league.close` — scheduled at the end of each season of a league (`jobs/league.rs`): moves
//!   each bucket's top `promote` players up a tier and bottom `relegate` down, from the ended
//!   season's frozen standings, once; tells each moved player (`notify`, kind `league`).
//!
//! - `ban.lift` — scheduled at a ban's `until_ms` (`PUT /admin/bans/{player}`): lifts that
//!   ban (only if it still has that `until_ms`: a ban renewed meanwhile stays) and puts the
//!   player's held entries back.
//!
//! Every job here is idempotent: ids are derived from what the job is about, so scheduling the
//! same thing twice is a `conflict` that is taken as "already there".
//!
//! A board's jobs belong to one generation of it (`keys::generation`, written when the board is
//! created): `season.rollover` and `reward.grant` carry it in their payload and in their id, and
//! do nothing once the board was deleted or created again, so a board re-created with the same
//! id starts clean and its jobs never collide with the old board's. `ban.lift` needs no
//! generation: it lifts only a ban with its own `until_ms`, which is the same lift for any board
//! of that id.

mod calendar;
pub mod league;
mod notifier;
mod worker;

use scorecast_shared::{BoardConfig, ErrorCode, Id, Reset};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{AppError, AppResult};
use crate::queue::{Job, NewJob, Queue};
use crate::state::AppState;
use crate::store::{Ban, Layer, Lift, Read, Scope};

pub use calendar::calendar_season;
pub use notifier::Notifier;
pub use worker::{run_next, settle, start};

/// The queue of Scorecast's own jobs.
pub const QUEUE: &str = "scorecast";
pub const KIND_ROLLOVER: &str = "season.rollover";
pub const KIND_REWARD: &str = "reward.grant";
pub const KIND_NOTIFY: &str = "notify";
pub const KIND_BAN_LIFT: &str = "ban.lift";
pub const KIND_TOURNAMENT_END: &str = "tournament.end";
pub const KIND_TOURNAMENT_EVENT: &str = "tournament.event";
/// The `kind` of the `notify` message a reward sends.
pub const NOTIFY_REWARD: &str = "reward";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloverPayload {
    pub board: String,
    /// The season that ends.
    pub season: String,
    pub end_ms: i64,
    /// The board generation it was scheduled for (`""`: a board from before generations).
    #[serde(default)]
    pub generation: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TournamentEndPayload {
    pub board: String,
    /// The tournament's `end_ms` (a tournament reconfigured with another end has another job).
    pub end_ms: i64,
    /// The board generation it was scheduled for (`""`: a board from before generations).
    #[serde(default)]
    pub generation: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TournamentEventPayload {
    pub board: String,
    /// `started` or `ending_soon`.
    pub event: String,
    /// The schedule it was made for: a tournament reconfigured since has its own jobs.
    pub start_ms: i64,
    pub end_ms: i64,
    #[serde(default)]
    pub generation: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardPayload {
    pub board: String,
    pub season: String,
    pub player: String,
    pub rank: u64,
    pub score: i64,
    /// The board generation of the season (`""`: a board from before generations).
    #[serde(default)]
    pub generation: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotifyPayload {
    pub player: String,
    pub kind: String,
    pub payload: Value,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BanLiftPayload {
    pub player: String,
    /// `None`: the ban on every board.
    pub board: Option<String>,
    pub until_ms: i64,
}

/// A job id `<prefix>.<parts joined by '.'>`, or a hash of the parts when that would be longer
/// than an id may be.
fn job_id(prefix: &str, parts: &[&str]) -> Id {
    let plain = format!("{prefix}.{}", parts.join("."));
    if let Ok(id) = Id::parse(&plain) {
        return id;
    }
    // FNV-1a over the parts (with a separator no id contains): stable across processes.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.join("\n").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    // unwrap: a short ASCII prefix, a dot and 16 hex digits form a valid id.
    Id::parse(&format!("{prefix}.{h:016x}")).unwrap()
}

fn kind(k: &str) -> Id {
    // unwrap: the kinds are constants of the id alphabet.
    Id::parse(k).unwrap()
}

/// The `scorecast` queue.
pub fn queue(st: &AppState) -> Queue {
    // unwrap: a constant of the id alphabet.
    st.queues.get(&Id::parse(QUEUE).unwrap())
}

/// The id of a per-board job: `parts`, then the board generation unless it is `""`.
fn board_job_id(prefix: &str, parts: &[&str], generation: &str) -> Id {
    let mut parts = parts.to_vec();
    if !generation.is_empty() {
        parts.push(generation);
    }
    job_id(prefix, &parts)
}

/// Enqueues unless a job with the same id is present; true if it was enqueued.
async fn enqueue_once(q: &Queue, job: NewJob) -> AppResult<bool> {
    match q.enqueue(job).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == ErrorCode::Conflict => Ok(false),
        Err(e) => Err(e),
    }
}

/// Schedules the rollover job of the season of `board` (generation `generation`) containing
/// `at_ms`, to run at its end. Returns the job id if it was scheduled now, `None` if it already
/// was (or `never` board).
pub async fn schedule_rollover(
    st: &AppState,
    board: &Id,
    cfg: &BoardConfig,
    generation: &str,
    at_ms: i64,
) -> AppResult<Option<Id>> {
    let Some((season, start_ms, end_ms)) = calendar_season(cfg.reset, at_ms) else {
        return Ok(None);
    };
    // A recurring tournament: this season's `ending_soon` (its `ended` comes with the rollover).
    if let Some(t) = cfg.tournament.filter(|t| t.schedule.recurring) {
        let soon = ending_soon_at(&t, end_ms);
        if soon > start_ms {
            let occurrence = (start_ms, end_ms);
            schedule_tournament_event(st, board, "ending_soon", soon, occurrence, generation)
                .await?;
        }
    }
    let id = board_job_id("rollover", &[board.as_str(), &season], generation);
    let payload = RolloverPayload {
        board: board.to_string(),
        season,
        end_ms,
        generation: generation.to_owned(),
    };
    // Urgent: rewards and the next rollover wait on it.
    let job = NewJob::new(&kind(KIND_ROLLOVER), &payload)?
        .id(id.clone())
        .priority(0)
        .at(end_ms);
    Ok(enqueue_once(&queue(st), job).await?.then_some(id))
}

/// A season of a `never` board was ended by an admin (`POST /admin/boards/{b}/rollover`): its
/// after-season work (rewards) runs as a rollover job now, like a calendar season's.
pub async fn season_ended(st: &AppState, board: &Id, season: &str, end_ms: i64) -> AppResult<()> {
    let generation = st.store.board_generation(board).await?;
    let payload = RolloverPayload {
        board: board.to_string(),
        season: season.to_owned(),
        end_ms,
        generation: generation.clone(),
    };
    let job = NewJob::new(&kind(KIND_ROLLOVER), &payload)?
        .id(board_job_id(
            "rollover",
            &[board.as_str(), season],
            &generation,
        ))
        .priority(0);
    enqueue_once(&queue(st), job).await.map(|_| ())
}

/// Schedules the `tournament.end` job of the board's one-off tournament at its `end_ms`, unless
/// that is past already (a job scheduled earlier stays queued until it runs). Returns the job
/// id if it was scheduled now.
pub async fn schedule_tournament_end(
    st: &AppState,
    board: &Id,
    cfg: &BoardConfig,
    generation: &str,
    now_ms: i64,
) -> AppResult<Option<Id>> {
    let Some(t) = cfg.tournament.filter(|t| !t.schedule.recurring) else {
        return Ok(None);
    };
    let (Some(start_ms), Some(end_ms)) = (t.schedule.start_ms, t.schedule.end_ms) else {
        return Ok(None);
    };
    // The live events before the end: `started`, `ending_soon`.
    for (event, at_ms) in [
        ("started", start_ms),
        ("ending_soon", ending_soon_at(&t, end_ms)),
    ] {
        if at_ms > now_ms && at_ms < end_ms {
            let occurrence = (start_ms, end_ms);
            schedule_tournament_event(st, board, event, at_ms, occurrence, generation).await?;
        }
    }
    if end_ms <= now_ms {
        return Ok(None);
    }
    let id = board_job_id(
        "tournament.end",
        &[board.as_str(), &end_ms.to_string()],
        generation,
    );
    let payload = TournamentEndPayload {
        board: board.to_string(),
        end_ms,
        generation: generation.to_owned(),
    };
    let job = NewJob::new(&kind(KIND_TOURNAMENT_END), &payload)?
        .id(id.clone())
        .priority(0)
        .at(end_ms);
    Ok(enqueue_once(&queue(st), job).await?.then_some(id))
}

/// When the `ending_soon` event of an occurrence ending at `end_ms` is due.
fn ending_soon_at(t: &scorecast_shared::Tournament, end_ms: i64) -> i64 {
    end_ms.saturating_sub(i64::try_from(t.ending_soon_ms).unwrap_or(i64::MAX))
}

/// Schedules the `tournament.event` job `event` of the occurrence `(start_ms, end_ms)` at
/// `at_ms` (once: its id names the board, the occurrence and the generation).
async fn schedule_tournament_event(
    st: &AppState,
    board: &Id,
    event: &str,
    at_ms: i64,
    (start_ms, end_ms): (i64, i64),
    generation: &str,
) -> AppResult<()> {
    let payload = TournamentEventPayload {
        board: board.to_string(),
        event: event.to_owned(),
        start_ms,
        end_ms,
        generation: generation.to_owned(),
    };
    let id = board_job_id(
        &format!("tournament.{event}"),
        &[board.as_str(), &start_ms.to_string(), &end_ms.to_string()],
        generation,
    );
    let job = NewJob::new(&kind(KIND_TOURNAMENT_EVENT), &payload)?
        .id(id)
        .priority(0)
        .at(at_ms);
    enqueue_once(&queue(st), job).await.map(|_| ())
}

/// Schedules the current season's rollover of every calendar board and the end of every
/// one-off tournament still running (at start-up; idempotent).
pub async fn schedule_rollovers(st: &AppState) -> AppResult<usize> {
    let now = st.queues.clock().now_ms();
    let mut n = 0;
    for (board, cfg) in st.store.boards().await? {
        if cfg.reset == Reset::Never {
            if cfg.tournament.is_some() {
                if let Ok(generation) = st.store.board_generation(&board).await {
                    n += usize::from(
                        schedule_tournament_end(st, &board, &cfg, &generation, now)
                            .await?
                            .is_some(),
                    );
                }
            }
            continue;
        }
        let generation = match st.store.board_generation(&board).await {
            Ok(g) => g,
            // Deleted meanwhile.
            Err(e) if e.code == ErrorCode::UnknownBoard => continue,
            Err(e) => return Err(e),
        };
        if schedule_rollover(st, &board, &cfg, &generation, now)
            .await?
            .is_some()
        {
            n += 1;
        }
    }
    for (league, cfg) in st.store.leagues().await? {
        n += usize::from(
            league::schedule_close(st, &league, &cfg, now)
                .await?
                .is_some(),
        );
    }
    Ok(n)
}

/// Hook after a board was created or changed: schedules its rollover if it has calendar
/// seasons. Never fails the caller; a failure is logged (start-up scheduling catches up).
pub async fn board_changed(st: &AppState, board: &Id, cfg: &BoardConfig) {
    if cfg.reset == Reset::Never && cfg.tournament.is_none() {
        return;
    }
    let now = st.queues.clock().now_ms();
    let scheduled = match st.store.board_generation(board).await {
        Ok(generation) if cfg.reset == Reset::Never => {
            schedule_tournament_end(st, board, cfg, &generation, now).await
        }
        Ok(generation) => schedule_rollover(st, board, cfg, &generation, now).await,
        Err(e) => Err(e),
    };
    if let Err(e) = scheduled {
        tracing::warn!(%board, error = %e, "could not schedule the season rollover");
    }
}

/// Schedules the job that lifts `ban` at its `until_ms` (none for a ban until lifted).
pub async fn schedule_ban_lift(st: &AppState, ban: &Ban) -> AppResult<()> {
    let Some(until_ms) = ban.until_ms else {
        return Ok(());
    };
    let scope = ban.board.as_deref().unwrap_or("*");
    let payload = BanLiftPayload {
        player: ban.player.clone(),
        board: ban.board.clone(),
        until_ms,
    };
    let job = NewJob::new(&kind(KIND_BAN_LIFT), &payload)?
        .id(job_id(
            "ban.lift",
            &[scope, &ban.player, &until_ms.to_string()],
        ))
        .priority(0)
        .at(until_ms);
    enqueue_once(&queue(st), job).await.map(|_| ())
}

/// Priority of a reward for `rank` (1-based): rank 1 → 0 (most urgent), rank 10 and below → 9;
/// FIFO within a priority keeps rank order.
pub fn reward_priority(rank: u64) -> u8 {
    rank.saturating_sub(1).min(9) as u8
}

fn payload<T: serde::de::DeserializeOwned>(job: &Job) -> anyhow::Result<T> {
    job.payload_as::<T>()
        .map_err(|e| anyhow::anyhow!("job {} ({}): bad payload: {e}", job.id, job.kind))
}

fn app(e: AppError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// Runs one job of the `scorecast` queue. Safe to run twice (at-least-once delivery).
pub async fn handle(st: &AppState, notifier: &dyn Notifier, job: &Job) -> anyhow::Result<()> {
    match job.kind.as_str() {
        KIND_ROLLOVER => rollover(st, payload(job)?).await,
        KIND_TOURNAMENT_END => tournament_end(st, payload(job)?).await,
        KIND_TOURNAMENT_EVENT => {
            let p: TournamentEventPayload = payload(job)?;
            let board = Id::parse(&p.board)?;
            let Some(cfg) = same_board(st, &board, &p.generation).await.map_err(app)? else {
                return Ok(());
            };
            // A recurring tournament's jobs are per season; a one-off's, per schedule.
            let same = cfg.tournament.is_some_and(|t| {
                t.schedule.recurring
                    || (t.schedule.start_ms == Some(p.start_ms)
                        && t.schedule.end_ms == Some(p.end_ms))
            });
            if same {
                st.store
                    .tournament_event(&board, &p.event, p.start_ms, p.end_ms)
                    .await
                    .map_err(app)?;
            }
            Ok(())
        }
        KIND_REWARD => reward(st, payload(job)?).await,
        league::KIND_LEAGUE_CLOSE => league::close(st, payload(job)?).await,
        KIND_NOTIFY => {
            let p: NotifyPayload = payload(job)?;
            let player = Id::parse(&p.player)?;
            let reached = notifier
                .notify(&player, &p.kind, &p.payload)
                .await
                .map_err(app)?;
            tracing::debug!(%player, kind = %p.kind, reached, "notify");
            Ok(())
        }
        KIND_BAN_LIFT => {
            let p: BanLiftPayload = payload(job)?;
            let player = Id::parse(&p.player)?;
            let lift = Lift::Expired {
                until_ms: p.until_ms,
            };
            let lifted = match &p.board {
                None => st.store.unban_everywhere(&player, lift).await,
                Some(b) => match st
                    .store
                    .unban_on(&Id::parse(b)?, &player, Layer::Board, lift)
                    .await
                {
                    // The board is gone, and its ban with it.
                    Err(e) if e.code == ErrorCode::UnknownBoard => Ok(false),
                    r => r,
                },
            }
            .map_err(app)?;
            tracing::info!(%player, board = ?p.board, lifted, "ban expired");
            Ok(())
        }
        other => anyhow::bail!("unknown job kind {other:?}"),
    }
}

/// The board's configuration if it still is generation `generation`; `None` when it is gone or
/// was created again (a job for it then does nothing and schedules nothing).
async fn same_board(st: &AppState, board: &Id, generation: &str) -> AppResult<Option<BoardConfig>> {
    let current = match st.store.board_generation(board).await {
        Ok(g) => g,
        Err(e) if e.code == ErrorCode::UnknownBoard => return Ok(None),
        Err(e) => return Err(e),
    };
    if current != generation {
        tracing::info!(%board, generation, current, "job of an earlier board of this id: nothing to do");
        return Ok(None);
    }
    match st.store.board(board).await {
        Ok(cfg) => Ok(Some(cfg)),
        Err(e) if e.code == ErrorCode::UnknownBoard => Ok(None),
        Err(e) => Err(e),
    }
}

async fn rollover(st: &AppState, p: RolloverPayload) -> anyhow::Result<()> {
    let board = Id::parse(&p.board)?;
    let Some(cfg) = same_board(st, &board, &p.generation).await.map_err(app)? else {
        return Ok(());
    };
    if cfg.reset != Reset::Never {
        // Calendar seasons change by the clock, with no submission to say so: tell the views.
        st.store.announce_season(&board).await.map_err(app)?;
    }
    if cfg.tournament.is_some_and(|t| t.schedule.recurring) {
        // This season was one occurrence of the tournament: its standings are final.
        st.store
            .end_tournament(&board, Some(&p.season))
            .await
            .map_err(app)?;
        // The next season is the next occurrence.
        if let Some((_, start_ms, end_ms)) = calendar_season(cfg.reset, p.end_ms) {
            st.store
                .tournament_event(&board, "started", start_ms, end_ms)
                .await
                .map_err(app)?;
        }
    }
    if cfg.rewards_top > 0 {
        let season = Id::parse(&p.season)?;
        let top = Read::Top {
            offset: 0,
            limit: u64::from(cfg.rewards_top),
        };
        // The board's own top, bucketed or not.
        let entries = match st
            .store
            .read_in(&board, Some(&season), Scope::Board, top)
            .await
        {
            Ok((page, _)) => page.entries,
            // Nobody scored in that season.
            Err(e) if e.code == ErrorCode::UnknownSeason => Vec::new(),
            Err(e) => return Err(app(e)),
        };
        enqueue_rewards(st, &p.board, &p.season, &p.generation, entries).await?;
    }
    // The next season starts where this one ended; a job that runs very late schedules the
    // following rollovers at once, so the chain catches up season by season.
    schedule_rollover(st, &board, &cfg, &p.generation, p.end_ms)
        .await
        .map_err(app)?;
    Ok(())
}

/// Enqueues a `reward.grant` job for each of `entries` (the top of a finished season), once:
/// the job ids are derived from the board, season, player and generation.
async fn enqueue_rewards(
    st: &AppState,
    board: &str,
    season: &str,
    generation: &str,
    entries: Vec<scorecast_shared::Entry>,
) -> anyhow::Result<()> {
    let q = queue(st);
    // In rank order, so equal priorities come out in rank order too.
    for e in entries {
        let reward = RewardPayload {
            board: board.to_owned(),
            season: season.to_owned(),
            player: e.player.clone(),
            rank: e.rank,
            score: e.score,
            generation: generation.to_owned(),
        };
        let id = board_job_id("reward", &[board, season, &e.player], generation);
        let job = NewJob::new(&kind(KIND_REWARD), &reward)
            .map_err(app)?
            .id(id)
            .priority(reward_priority(e.rank));
        enqueue_once(&q, job).await.map_err(app)?;
    }
    Ok(())
}

/// The end of a one-off tournament: its final standings frozen (once), then the rewards of
/// its `rewards_top` players read from them. A job of a tournament since reconfigured with
/// another end (or removed) does nothing: the new end has its own job.
async fn tournament_end(st: &AppState, p: TournamentEndPayload) -> anyhow::Result<()> {
    let board = Id::parse(&p.board)?;
    let Some(cfg) = same_board(st, &board, &p.generation).await.map_err(app)? else {
        return Ok(());
    };
    let current = cfg
        .tournament
        .filter(|t| !t.schedule.recurring && t.schedule.end_ms == Some(p.end_ms));
    if current.is_none() {
        tracing::info!(%board, end_ms = p.end_ms, "tournament reconfigured: this end is not its end");
        return Ok(());
    }
    let (season, frozen) = st.store.end_tournament(&board, None).await.map_err(app)?;
    tracing::info!(%board, %season, frozen, "tournament ended");
    if cfg.rewards_top > 0 {
        let season_id = Id::parse(&season)?;
        let page = st
            .store
            .read_final(&board, Some(&season_id), 0, u64::from(cfg.rewards_top))
            .await
            .map_err(app)?;
        enqueue_rewards(st, &p.board, &season, &p.generation, page.entries).await?;
    }
    Ok(())
}

async fn reward(st: &AppState, p: RewardPayload) -> anyhow::Result<()> {
    let board = Id::parse(&p.board)?;
    let record = json!({
        "board": p.board,
        "season": p.season,
        "player": p.player,
        "rank": p.rank,
        "score": p.score,
        "granted_at_ms": st.queues.clock().now_ms(),
    });
    // One script: the board generation check and the HSETNX (a job that runs twice grants
    // once; a job of a deleted or re-created board writes nothing).
    let granted = st
        .store
        .grant_reward(
            &board,
            &p.generation,
            &format!("{}:{}", p.season, p.player),
            &record.to_string(),
        )
        .await
        .map_err(app)?;
    match granted {
        Some(true) => {}
        Some(false) => return Ok(()),
        None => {
            tracing::info!(%board, generation = %p.generation, player = %p.player, "reward of an earlier board of this id: not granted");
            return Ok(());
        }
    }
    // A crash right here loses the message (the grant stands, visible in lb:{b}:rewards).
    let notify = NotifyPayload {
        player: p.player.clone(),
        kind: NOTIFY_REWARD.into(),
        payload: record,
    };
    let id = board_job_id(
        "notify.reward",
        &[&p.board, &p.season, &p.player],
        &p.generation,
    );
    let job = NewJob::new(&kind(KIND_NOTIFY), &notify)
        .map_err(app)?
        .id(id)
        .priority(reward_priority(p.rank));
    enqueue_once(&queue(st), job).await.map_err(app)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_readable_and_fall_back_to_a_hash() {
        assert_eq!(
            job_id("rollover", &["b", "2025-03"]).as_str(),
            "rollover.b.2025-03"
        );
        let long = "x".repeat(64);
        let id = job_id("reward", &[&long, "2025-03", "p"]);
        assert_eq!(id.as_str().len(), "reward.".len() + 16);
        assert_eq!(id, job_id("reward", &[&long, "2025-03", "p"]));
        assert_ne!(id, job_id("reward", &[&long, "2025-03", "q"]));
    }

    #[test]
    fn better_ranks_are_more_urgent() {
        assert_eq!(reward_priority(1), 0);
        assert_eq!(reward_priority(2), 1);
        assert_eq!(reward_priority(10), 9);
        assert_eq!(reward_priority(500), 9);
    }
}
