//! Scorecast's own jobs, on its own queue `scorecast` (DESIGN §7):
//!
//! - `season.rollover` — scheduled at the end of each season of a calendar board (`reset`
//!   daily/weekly/monthly). Seasons themselves turn over inside the submission script by the
//!   clock, so the boundary is exact even when this job runs late; the job only does the
//!   after-season work: a `reward.grant` job for each of the finished season's `rewards_top`
//!   players (better rank, more urgent priority; equal priorities in rank order), then it
//!   schedules the next rollover.
//! - `reward.grant` — records the grant in `lb:{<board>}:rewards` (`<season>:<player>` →
//!   record) with HSETNX, so a job that runs twice grants once; a new grant enqueues a `notify` job.
//! - `notify` — pushes `{"type":"notify","kind","payload"}` to the player's open WebSockets
//!   through a [`Notifier`] (the WebSocket hub plugs in there).
//!
//! Every job here is idempotent: ids are derived from what the job is about, so scheduling the
//! same thing twice is a `conflict` that is taken as "already there".

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Datelike, Duration as Days, NaiveDate, Utc};
use redis::AsyncCommands;
use scorecast_shared::{BoardConfig, ErrorCode, Id, Reset};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::error::{AppError, AppResult};
use crate::keys;
use crate::queue::{background, Background, Claimed, Job, NewJob, Queue};
use crate::state::AppState;
use crate::store::Read;

/// The queue of Scorecast's own jobs.
pub const QUEUE: &str = "scorecast";
pub const KIND_ROLLOVER: &str = "season.rollover";
pub const KIND_REWARD: &str = "reward.grant";
pub const KIND_NOTIFY: &str = "notify";
/// The `kind` of the `notify` message a reward sends.
pub const NOTIFY_REWARD: &str = "reward";

/// How a worker waits for the next job (one dedicated connection per worker meanwhile).
const CLAIM_WAIT: Duration = Duration::from_secs(10);

/// Pushes a `notify` message to a connected player. The WebSocket hub implements this; the
/// default only logs. Called from worker tasks: it must not block (queue, don't await sockets).
pub trait Notifier: Send + Sync + 'static {
    /// Sends `{"type":"notify","kind":kind,"payload":payload}` to every open session of
    /// `player` on this instance; returns how many sessions it was queued for.
    fn notify(&self, player: &Id, kind: &str, payload: &Value) -> usize;
}

/// The default [`Notifier`]: logs and reaches nobody.
pub struct LogNotifier;

impl Notifier for LogNotifier {
    fn notify(&self, player: &Id, kind: &str, _payload: &Value) -> usize {
        tracing::info!(%player, kind, "notify (no WebSocket hub attached)");
        0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloverPayload {
    pub board: String,
    /// The season that ends.
    pub season: String,
    pub end_ms: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardPayload {
    pub board: String,
    pub season: String,
    pub player: String,
    pub rank: u64,
    pub score: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotifyPayload {
    pub player: String,
    pub kind: String,
    pub payload: Value,
}

/// The calendar season containing `now_ms` (UTC): name, start and end ms — the same names as
/// `calendar_season` in `lua/lib.lua` (`YYYY-MM-DD`, ISO week `YYYY-Www`, `YYYY-MM`). `None`
/// for `never` boards.
pub fn calendar_season(reset: Reset, now_ms: i64) -> Option<(String, i64, i64)> {
    let day = DateTime::<Utc>::from_timestamp_millis(now_ms)?.date_naive();
    let ms = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis())
    };
    match reset {
        Reset::Never => None,
        Reset::Daily => Some((
            day.format("%Y-%m-%d").to_string(),
            ms(day)?,
            ms(day.succ_opt()?)?,
        )),
        Reset::Weekly => {
            let monday = day - Days::days(i64::from(day.weekday().num_days_from_monday()));
            let w = day.iso_week();
            Some((
                format!("{:04}-W{:02}", w.year(), w.week()),
                ms(monday)?,
                ms(monday + Days::days(7))?,
            ))
        }
        Reset::Monthly => {
            let first = day.with_day(1)?;
            let next = if first.month() == 12 {
                NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)?
            };
            Some((first.format("%Y-%m").to_string(), ms(first)?, ms(next)?))
        }
    }
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

/// Enqueues unless a job with the same id is present; true if it was enqueued.
async fn enqueue_once(q: &Queue, job: NewJob) -> AppResult<bool> {
    match q.enqueue(job).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == ErrorCode::Conflict => Ok(false),
        Err(e) => Err(e),
    }
}

/// Schedules the rollover job of the season of `board` containing `at_ms`, to run at its end.
/// Returns the job id if it was scheduled now, `None` if it already was (or `never` board).
pub async fn schedule_rollover(
    st: &AppState,
    board: &Id,
    cfg: &BoardConfig,
    at_ms: i64,
) -> AppResult<Option<Id>> {
    let Some((season, _, end_ms)) = calendar_season(cfg.reset, at_ms) else {
        return Ok(None);
    };
    let id = job_id("rollover", &[board.as_str(), &season]);
    let payload = RolloverPayload {
        board: board.to_string(),
        season,
        end_ms,
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
    let payload = RolloverPayload {
        board: board.to_string(),
        season: season.to_owned(),
        end_ms,
    };
    let job = NewJob::new(&kind(KIND_ROLLOVER), &payload)?
        .id(job_id("rollover", &[board.as_str(), season]))
        .priority(0);
    enqueue_once(&queue(st), job).await.map(|_| ())
}

/// Schedules the current season's rollover of every calendar board (at start-up; idempotent).
pub async fn schedule_rollovers(st: &AppState) -> AppResult<usize> {
    let now = st.queues.clock().now_ms();
    let mut n = 0;
    for (board, cfg) in st.store.boards().await? {
        if schedule_rollover(st, &board, &cfg, now).await?.is_some() {
            n += 1;
        }
    }
    Ok(n)
}

/// Hook after a board was created or changed: schedules its rollover if it has calendar
/// seasons. Never fails the caller; a failure is logged (start-up scheduling catches up).
pub async fn board_changed(st: &AppState, board: &Id, cfg: &BoardConfig) {
    let now = st.queues.clock().now_ms();
    if let Err(e) = schedule_rollover(st, board, cfg, now).await {
        tracing::warn!(%board, error = %e, "could not schedule the season rollover");
    }
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
        KIND_REWARD => reward(st, payload(job)?).await,
        KIND_NOTIFY => {
            let p: NotifyPayload = payload(job)?;
            let player = Id::parse(&p.player)?;
            let reached = notifier.notify(&player, &p.kind, &p.payload);
            tracing::debug!(%player, kind = %p.kind, reached, "notify");
            Ok(())
        }
        other => anyhow::bail!("unknown job kind {other:?}"),
    }
}

async fn rollover(st: &AppState, p: RolloverPayload) -> anyhow::Result<()> {
    let board = Id::parse(&p.board)?;
    let cfg = match st.store.board(&board).await {
        Ok(cfg) => cfg,
        // The board is gone: nothing to do, and nothing to schedule.
        Err(e) if e.code == ErrorCode::UnknownBoard => return Ok(()),
        Err(e) => return Err(app(e)),
    };
    if cfg.reset != Reset::Never {
        // Calendar seasons change by the clock, with no submission to say so: tell the views.
        st.store.announce_season(&board).await.map_err(app)?;
    }
    if cfg.rewards_top > 0 {
        let season = Id::parse(&p.season)?;
        let top = Read::Top {
            offset: 0,
            limit: u64::from(cfg.rewards_top),
        };
        let entries = match st.store.read(&board, Some(&season), top).await {
            Ok(page) => page.entries,
            // Nobody scored in that season.
            Err(e) if e.code == ErrorCode::UnknownSeason => Vec::new(),
            Err(e) => return Err(app(e)),
        };
        let q = queue(st);
        // In rank order, so equal priorities come out in rank order too.
        for e in entries {
            let reward = RewardPayload {
                board: p.board.clone(),
                season: p.season.clone(),
                player: e.player.clone(),
                rank: e.rank,
                score: e.score,
            };
            let id = job_id("reward", &[&p.board, &p.season, &e.player]);
            let job = NewJob::new(&kind(KIND_REWARD), &reward)
                .map_err(app)?
                .id(id)
                .priority(reward_priority(e.rank));
            enqueue_once(&q, job).await.map_err(app)?;
        }
    }
    // The next season starts where this one ended; a job that runs very late schedules the
    // following rollovers at once, so the chain catches up season by season.
    schedule_rollover(st, &board, &cfg, p.end_ms)
        .await
        .map_err(app)?;
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
    let mut c = st.store.conn();
    // HSETNX is the grant: one atomic command, so a job that runs twice grants once.
    let granted: bool = c
        .hset_nx(
            keys::rewards(&board),
            format!("{}:{}", p.season, p.player),
            record.to_string(),
        )
        .await?;
    if !granted {
        return Ok(());
    }
    // A crash right here loses the message (the grant stands, visible in lb:{b}:rewards).
    let notify = NotifyPayload {
        player: p.player.clone(),
        kind: NOTIFY_REWARD.into(),
        payload: record,
    };
    let id = job_id("notify.reward", &[&p.board, &p.season, &p.player]);
    let job = NewJob::new(&kind(KIND_NOTIFY), &notify)
        .map_err(app)?
        .id(id)
        .priority(reward_priority(p.rank));
    enqueue_once(&queue(st), job).await.map_err(app)?;
    Ok(())
}

/// Runs a claimed job and settles it: ack on success, nack (backoff) on failure. Returns
/// whether it succeeded.
pub async fn settle(
    st: &AppState,
    notifier: &dyn Notifier,
    q: &Queue,
    c: &Claimed,
) -> AppResult<bool> {
    let id = Id::parse(&c.job.id).map_err(AppError::from)?;
    match handle(st, notifier, &c.job).await {
        Ok(()) => {
            q.ack(&id, &c.lease.token).await?;
            Ok(true)
        }
        Err(e) => {
            tracing::warn!(job = %c.job.id, kind = %c.job.kind, attempts = c.job.attempts, error = %e, "job failed");
            q.nack(&id, &c.lease.token, None).await?;
            Ok(false)
        }
    }
}

/// Claims and runs the next ready job of the `scorecast` queue, if any (tests, tools).
pub async fn run_next(st: &AppState, notifier: &dyn Notifier) -> AppResult<Option<(Job, bool)>> {
    let q = queue(st);
    let lease = Duration::from_millis(st.settings.queues.default_lease_ms);
    let Some(c) = q.claim(lease).await? else {
        return Ok(None);
    };
    let ok = settle(st, notifier, &q, &c).await?;
    Ok(Some((c.job, ok)))
}

/// Starts the background: promoter, reaper and `job_workers` workers for the `scorecast`
/// queue. Dropping the returned [`Background`] stops them.
pub fn start(st: &AppState, notifier: Arc<dyn Notifier>) -> Background {
    let (mut bg, stop) = Background::new();
    background::spawn_maintenance(&st.queues, &mut bg, &stop);
    for _ in 0..st.settings.queues.job_workers {
        bg.push(tokio::spawn(worker(
            st.clone(),
            notifier.clone(),
            stop.clone(),
        )));
    }
    bg
}

async fn worker(st: AppState, notifier: Arc<dyn Notifier>, mut stop: watch::Receiver<bool>) {
    let q = queue(&st);
    let lease = Duration::from_millis(st.settings.queues.default_lease_ms);
    loop {
        let claimed = tokio::select! {
            r = q.claim_wait(lease, CLAIM_WAIT) => r,
            _ = stop.changed() => return,
        };
        match claimed {
            Ok(Some(c)) => {
                if let Err(e) = settle(&st, &*notifier, &q, &c).await {
                    tracing::warn!(job = %c.job.id, error = %e, "could not settle a job; its lease will lapse");
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "claiming from the scorecast queue failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => return,
                }
            }
        }
        if *stop.borrow() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
    }

    #[test]
    fn calendar_seasons_match_the_lua_names() {
        let (n, s, e) = calendar_season(Reset::Daily, at("2025-03-10T12:34:56Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2025-03-10",
                at("2025-03-10T00:00:00Z"),
                at("2025-03-11T00:00:00Z")
            )
        );
        // 2024-12-30 is a Monday in ISO week 1 of 2025.
        let (n, s, e) = calendar_season(Reset::Weekly, at("2025-01-01T08:00:00Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2025-W01",
                at("2024-12-30T00:00:00Z"),
                at("2025-01-06T00:00:00Z")
            )
        );
        let (n, _, _) = calendar_season(Reset::Weekly, at("2021-01-03T23:59:59Z")).unwrap();
        assert_eq!(n, "2020-W53");
        let (n, s, e) = calendar_season(Reset::Monthly, at("2024-12-31T23:59:59.999Z")).unwrap();
        assert_eq!(
            (n.as_str(), s, e),
            (
                "2024-12",
                at("2024-12-01T00:00:00Z"),
                at("2025-01-01T00:00:00Z")
            )
        );
        // The end is exclusive: the boundary instant belongs to the next season.
        let (n, _, _) = calendar_season(Reset::Monthly, at("2025-01-01T00:00:00Z")).unwrap();
        assert_eq!(n, "2025-01");
        assert!(calendar_season(Reset::Never, 0).is_none());
    }

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
