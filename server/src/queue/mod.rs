//! Job queues on sorted sets (`docs/queues.md`): the article's priority queue (`poll`, `take`) and
//! delayed queue, made safe with leases (`claim` / `ack` / `nack` / `extend`), because after a
//! plain pop the job has left Redis and a dying worker loses it.
//!
//! Every multi-step operation is one `lua/q_*.lua` script over the queue's eight keys
//! (`keys::queue`). Job bodies are JSON built here and stored as-is; the scripts only move ids
//! and update small counters, so a payload comes back byte for byte as the client sent it.
//! Blocking commands (BZPOPMIN, BLPOP) run only on dedicated connections (`blocking`), never on
//! the shared multiplexed one. `background` holds the promoter and the reaper.

pub mod background;
mod blocking;
mod enqueue;
mod gauges;
mod job;

use std::sync::Arc;
use std::time::Duration;

use redis::{AsyncCommands, Value};
use scorecast_shared::Id;

use crate::clock::Clock;
use crate::config::QueueSettings;
use crate::conn::RedisConn;
use crate::error::{AppError, AppResult};
use crate::lanes::Lanes;
use crate::{keys, reply, scripts};

pub use background::Background;
use background::Wakeup;
pub use gauges::QueueGauges;
pub use job::*;

/// Priorities run 0 (most urgent) ..= 9.
pub const MAX_PRIORITY: u8 = 9;
/// Upper bound of `max_attempts`.
pub const MAX_ATTEMPTS: u32 = 1000;
/// The furthest ahead a job may be scheduled (`run_at_ms`, `delay_ms`, a nack's `delay_ms`):
/// 366 days. Beyond that a time is far more likely a unit mistake than a plan, and a job parked
/// there would never run nor dead-letter.
pub const MAX_SCHEDULE_AHEAD_MS: i64 = 366 * 86_400_000;
/// Most jobs one bulk enqueue takes.
pub const MAX_BULK_JOBS: usize = 1000;
/// Most bytes of stored job bodies (payload and fields) one bulk enqueue takes: 1 MiB, so one
/// script call never holds Redis for long. (Over HTTP the 64 KiB request limit comes first.)
pub const MAX_BULK_BYTES: usize = 1 << 20;
/// Longest reason a nack may give, in characters.
pub const MAX_REASON_CHARS: usize = 500;
/// Most jobs one call claims, and most acks it carries (`claim_batch`, `ack_batch_next`).
pub const MAX_CLAIM_BATCH: usize = 100;
/// Lapsed leases reaped and due jobs promoted inline by each claim, at most.
const INLINE_BOUND: u32 = 16;

/// Every queue of one Redis: cheap to clone, shared by handlers, workers and background tasks.
#[derive(Clone)]
pub struct Queues {
    inner: Arc<Inner>,
}

struct Inner {
    conn: RedisConn,
    clock: Clock,
    settings: QueueSettings,
    pool: blocking::Pool,
    promoter: Wakeup,
    reaper: Wakeup,
    /// When this instance last wrote each queue's name to the `sc:queues` index.
    indexed: std::sync::Mutex<std::collections::HashMap<Id, std::time::Instant>>,
    /// Single enqueues waiting for their queue's next script call.
    enqueues: Lanes<enqueue::PendingJob>,
}

/// One queue.
#[derive(Clone)]
pub struct Queue {
    queues: Queues,
    name: Id,
    keys: [String; 8],
}

impl Queues {
    /// `dialer` opens the dedicated connections of blocking waits (on a cluster, each is routed
    /// to the node that owns the queue's slot); `conn` is the shared one.
    pub fn new(
        conn: RedisConn,
        dialer: impl Into<crate::conn::Dialer>,
        clock: Clock,
        settings: QueueSettings,
    ) -> Queues {
        Queues {
            inner: Arc::new(Inner {
                conn,
                clock,
                pool: blocking::Pool::new(dialer.into(), settings.max_waiters.max(1)),
                settings,
                promoter: Wakeup::default(),
                reaper: Wakeup::default(),
                indexed: Default::default(),
                enqueues: Lanes::new(enqueue::LANE_IDLE),
            }),
        }
    }

    /// The queue called `name`.
    pub fn get(&self, name: &Id) -> Queue {
        Queue {
            queues: self.clone(),
            name: name.clone(),
            keys: keys::queue(name),
        }
    }

    pub fn settings(&self) -> &QueueSettings {
        &self.inner.settings
    }

    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// Every queue that has had a job (the `sc:queues` index), sorted.
    pub async fn names(&self) -> AppResult<Vec<Id>> {
        let mut c = self.inner.conn.clone();
        let names: Vec<String> = c.smembers(keys::QUEUES).await?;
        let mut ids: Vec<Id> = names.iter().filter_map(|n| Id::parse(n).ok()).collect();
        ids.sort();
        Ok(ids)
    }

    /// Whether `name` has had a job (is in the `sc:queues` index).
    pub async fn exists(&self, name: &Id) -> AppResult<bool> {
        let mut c = self.inner.conn.clone();
        Ok(c.sismember(keys::QUEUES, name.as_str()).await?)
    }

    /// Wakes the promoter and the reaper now (after moving a manual clock, say).
    pub fn wake_background(&self) {
        self.inner.promoter.wake_if_earlier(i64::MIN);
        self.inner.reaper.wake_if_earlier(i64::MIN);
    }

    fn conn(&self) -> RedisConn {
        self.inner.conn.clone()
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// `bad_request` unless `n` is in `min..=MAX_CLAIM_BATCH`.
fn check_batch(what: &str, n: usize, min: usize) -> AppResult<()> {
    if (min..=MAX_CLAIM_BATCH).contains(&n) {
        return Ok(());
    }
    Err(AppError::bad_request(format!(
        "{what} must be {min}..={MAX_CLAIM_BATCH}"
    )))
}

fn fresh_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Queue {
    pub fn name(&self) -> &Id {
        &self.name
    }

    fn invoke(&self, script: &'static redis::Script) -> redis::ScriptInvocation<'static> {
        let mut inv = script.prepare_invoke();
        for k in &self.keys {
            inv.key(k);
        }
        inv
    }

    fn inner(&self) -> &Inner {
        &self.queues.inner
    }

    /// The article's at-most-once poll (ZPOPMIN): the best ready job, removed from Redis.
    pub async fn poll(&self) -> AppResult<Option<Job>> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_POP)
            .arg(self.inner().clock.arg())
            .arg(INLINE_BOUND)
            .invoke_async(&mut c)
            .await?;
        self.popped(v)
    }

    fn popped(&self, v: Value) -> AppResult<Option<Job>> {
        match reply::split(v)? {
            (tag, r) if tag == "ok" => Ok(Some(job(r.get(1), r.get(2))?)),
            _ => Ok(None),
        }
    }

    /// The article's blocking take (BZPOPMIN, at most once), waiting up to `timeout` on a
    /// dedicated connection. Between BZPOPMIN and the step that reads and forgets the body the
    /// job is in no set: a process killed in that round trip loses it (at-most-once) and leaves
    /// its body behind.
    pub async fn take(&self, timeout: Duration) -> AppResult<Option<Job>> {
        if timeout.is_zero() {
            return self.poll().await;
        }
        let Some(mut conn) = self.inner().pool.get(timeout).await? else {
            return Ok(None);
        };
        // Redis reads a decimal timeout in seconds; 0 would mean "forever".
        let secs = format!("{:.3}", (ms(timeout).max(1) as f64) / 1000.0);
        let mut cmd = redis::cmd("BZPOPMIN");
        cmd.arg(&self.keys[0]).arg(secs);
        let popped: Option<(String, String, f64)> = conn.block(&cmd, timeout).await?;
        let Some((_, id, _)) = popped else {
            return Ok(None);
        };
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_TAKE)
            .arg(id)
            .invoke_async(&mut c)
            .await?;
        self.popped(v)
    }

    /// At-least-once claim: the best ready job, moved to processing under a fresh lease of
    /// `lease`; counts one attempt. `None` when nothing is ready.
    pub async fn claim(&self, lease: Duration) -> AppResult<Option<Claimed>> {
        Ok(self.claim_batch(lease, 1).await?.pop())
    }

    /// Claims up to `max` (1..=[`MAX_CLAIM_BATCH`]) of the best ready jobs in one step, each
    /// under a lease of its own (own token, one deadline); empty when nothing is ready.
    pub async fn claim_batch(&self, lease: Duration, max: usize) -> AppResult<Vec<Claimed>> {
        check_batch("max", max, 1)?;
        Ok(self.settle_and_claim(&[], lease, max).await?.0)
    }

    /// [`Queue::claim`], waiting up to `wait` for a job. The wait blocks (BLPOP on the wake
    /// list) on a dedicated connection, never on the shared one; it also wakes by itself when a
    /// delayed job falls due or a lease lapses, so it needs no promoter to see those.
    pub async fn claim_wait(&self, lease: Duration, wait: Duration) -> AppResult<Option<Claimed>> {
        Ok(self.claim_batch_wait(lease, 1, wait).await?.pop())
    }

    /// [`Queue::claim_batch`], waiting up to `wait` for at least one job (as
    /// [`Queue::claim_wait`] does).
    pub async fn claim_batch_wait(
        &self,
        lease: Duration,
        max: usize,
        wait: Duration,
    ) -> AppResult<Vec<Claimed>> {
        check_batch("max", max, 1)?;
        let deadline = tokio::time::Instant::now() + wait;
        let mut conn = None;
        loop {
            let (claimed, next) = self.settle_and_claim(&[], lease, max).await?;
            if !claimed.is_empty() {
                return Ok(claimed);
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(claimed);
            }
            if conn.is_none() {
                conn = self.inner().pool.get(left).await?;
            }
            let Some(c) = conn.as_mut() else {
                return Ok(claimed); // no dedicated connection free within the wait
            };
            // Block until a wake-up, the wait's end, or the next due time / lease deadline
            // (then the next claim promotes or reaps it inline).
            let mut slice = left;
            if let Some((next, now)) = next {
                slice = slice.min(Duration::from_millis((next - now).clamp(5, i64::MAX) as u64));
            }
            let secs = format!("{:.3}", (ms(slice).max(1) as f64) / 1000.0);
            let mut cmd = redis::cmd("BLPOP");
            cmd.arg(&self.keys[7]).arg(secs);
            let _: Option<(String, String)> = c.block(&cmd, slice).await?;
        }
    }

    /// Finishes a claimed job. A token that is no longer valid: `lease_lost`.
    pub async fn ack(&self, id: &Id, token: &str) -> AppResult<()> {
        self.settle_and_claim(&[(id, token)], Duration::ZERO, 0)
            .await
            .map(|_| ())
    }

    /// Finishes a claimed job and claims the next one in the same step (one round trip):
    /// `None` when nothing was ready (the ack is done). A token that is no longer valid:
    /// `lease_lost`, and nothing is acked or claimed.
    pub async fn ack_next(
        &self,
        id: &Id,
        token: &str,
        lease: Duration,
    ) -> AppResult<Option<Claimed>> {
        Ok(self
            .settle_and_claim(&[(id, token)], lease, 1)
            .await?
            .0
            .pop())
    }

    /// Finishes every job of `acks` (id, token; at most [`MAX_CLAIM_BATCH`]) and claims up to
    /// `max` (0..=[`MAX_CLAIM_BATCH`]) next ones, in one step. All-or-nothing: one token that
    /// is no longer valid is `lease_lost`, and nothing is acked or claimed.
    pub async fn ack_batch_next(
        &self,
        acks: &[(&Id, &str)],
        lease: Duration,
        max: usize,
    ) -> AppResult<Vec<Claimed>> {
        check_batch("acks", acks.len(), 0)?;
        check_batch("max", max, 0)?;
        Ok(self.settle_and_claim(acks, lease, max).await?.0)
    }

    /// The one claim path (`q_claim.lua`): acks `acks`, then claims up to `max` jobs. When
    /// jobs were wanted and none was ready, also the next time something may become ready
    /// (and the clock then).
    async fn settle_and_claim(
        &self,
        acks: &[(&Id, &str)],
        lease: Duration,
        max: usize,
    ) -> AppResult<(Vec<Claimed>, Option<(i64, i64)>)> {
        let lease_ms = ms(lease).max(1);
        let tokens: Vec<String> = (0..max).map(|_| fresh_token()).collect();
        let mut inv = self.invoke(&scripts::Q_CLAIM);
        inv.arg(lease_ms)
            .arg(self.inner().clock.arg())
            .arg(INLINE_BOUND)
            .arg(acks.len());
        for (id, token) in acks {
            inv.arg(id.as_str()).arg(*token);
        }
        for t in &tokens {
            inv.arg(t);
        }
        let mut c = self.queues.conn();
        let started = std::time::Instant::now();
        let v: Value = inv.invoke_async(&mut c).await?;
        crate::metrics::script_done(if acks.is_empty() { "q_claim" } else { "q_ack" }, started);
        let (tag, r) = reply::split(v)?;
        if !acks.is_empty() {
            crate::metrics::JOBS
                .with_label_values(&[self.name.as_str(), "acked"])
                .inc_by(acks.len() as u64);
        }
        if tag != "ok" {
            let next = r.first().and_then(reply::int).filter(|t| *t >= 0);
            let now = r.get(1).and_then(reply::int).unwrap_or(0);
            return Ok((Vec::new(), next.map(|n| (n, now))));
        }
        let expires_at_ms = r
            .first()
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("deadline"))?;
        let claimed = r[1..]
            .chunks_exact(3)
            .zip(tokens)
            .map(|(e, token)| {
                Ok(Claimed {
                    job: job(e.get(1), e.get(2))?,
                    lease: Lease {
                        token,
                        expires_at_ms,
                    },
                })
            })
            .collect::<AppResult<Vec<_>>>()?;
        if !claimed.is_empty() {
            self.inner().reaper.wake_if_earlier(expires_at_ms);
        }
        Ok((claimed, None))
    }

    /// Counts a settled job in `scorecast_jobs_total`.
    fn settled(&self, outcome: &str) {
        crate::metrics::JOBS
            .with_label_values(&[self.name.as_str(), outcome])
            .inc();
    }

    /// Gives a claimed job back: after `delay` if given, else after exponential backoff with
    /// jitter; to dead letters when its attempts are used up.
    pub async fn nack(&self, id: &Id, token: &str, delay: Option<Duration>) -> AppResult<Requeued> {
        self.nack_because(id, token, delay, None).await
    }

    /// [`Queue::nack`], saying why the attempt failed (at most [`MAX_REASON_CHARS`]
    /// characters, else `bad_request`): the reason is kept in the job's attempt history, shown
    /// with its dead letter.
    pub async fn nack_because(
        &self,
        id: &Id,
        token: &str,
        delay: Option<Duration>,
        reason: Option<&str>,
    ) -> AppResult<Requeued> {
        if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
            return Err(AppError::bad_request(format!(
                "reason must be at most {MAX_REASON_CHARS} characters"
            )));
        }
        if delay.is_some_and(|d| d.as_millis() > MAX_SCHEDULE_AHEAD_MS as u128) {
            return Err(AppError::bad_request(format!(
                "delay_ms must be 0..={MAX_SCHEDULE_AHEAD_MS} (366 days)"
            )));
        }
        let s = &self.inner().settings;
        let mut c = self.queues.conn();
        let started = std::time::Instant::now();
        let v: Value = self
            .invoke(&scripts::Q_NACK)
            .arg(id.as_str())
            .arg(token)
            .arg(delay.map(|d| ms(d).to_string()).unwrap_or_default())
            .arg(s.backoff_base_ms)
            .arg(s.backoff_max_ms)
            // The jitter comes from here, not from Lua's math.random.
            .arg(format!("{:.6}", rand::random::<f64>()))
            .arg(self.inner().clock.arg())
            .arg(reason.unwrap_or(""))
            .invoke_async(&mut c)
            .await?;
        crate::metrics::script_done("q_nack", started);
        let (_, r) = reply::split(v)?;
        let due = r
            .get(1)
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("due"))?;
        let now = r
            .get(2)
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("now"))?;
        let requeued = match r.first().and_then(reply::text).as_deref() {
            Some("dead") => Requeued::Dead,
            Some("delayed") => {
                self.inner().promoter.wake_if_earlier(due);
                Requeued::Delayed {
                    run_at_ms: due,
                    delay_ms: due - now,
                }
            }
            _ => Requeued::Ready,
        };
        self.settled(if requeued == Requeued::Dead {
            "dead"
        } else {
            "retried"
        });
        Ok(requeued)
    }

    /// Extends a live lease to now + `lease`.
    pub async fn extend(&self, id: &Id, token: &str, lease: Duration) -> AppResult<Lease> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_EXTEND)
            .arg(id.as_str())
            .arg(token)
            .arg(ms(lease).max(1))
            .arg(self.inner().clock.arg())
            .invoke_async(&mut c)
            .await?;
        let (_, r) = reply::split(v)?;
        let expires_at_ms = r
            .first()
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("deadline"))?;
        // A shortened lease may lapse before the reaper's next round: wake it for that.
        self.inner().reaper.wake_if_earlier(expires_at_ms);
        Ok(Lease {
            token: token.to_owned(),
            expires_at_ms,
        })
    }

    /// Jobs per state.
    pub async fn counts(&self) -> AppResult<Counts> {
        let mut c = self.queues.conn();
        let (ready, delayed, processing, dead): (u64, u64, u64, u64) = redis::pipe()
            .atomic()
            .zcard(&self.keys[0])
            .zcard(&self.keys[1])
            .zcard(&self.keys[2])
            .zcard(&self.keys[3])
            .query_async(&mut c)
            .await?;
        Ok(Counts {
            ready,
            delayed,
            processing,
            dead,
        })
    }

    /// How far past its run time (ms) the most overdue delayed job is at `now_ms`; 0 when
    /// none is due (the promoter's lag).
    pub async fn lag_ms(&self, now_ms: i64) -> AppResult<i64> {
        let mut c = self.queues.conn();
        let head: Vec<(String, f64)> = c.zrange_withscores(&self.keys[1], 0, 0).await?;
        Ok(head
            .first()
            .map_or(0, |(_, due)| (now_ms - *due as i64).max(0)))
    }

    /// Dead letters, most recent first, and how many there are in all.
    pub async fn dead(&self, offset: u64, limit: u64) -> AppResult<(u64, Vec<DeadJob>)> {
        let (total, jobs) = self.list(JobState::Dead, offset, limit).await?;
        let dead = jobs
            .into_iter()
            .map(|l| DeadJob {
                job: l.job,
                died_at_ms: l.at_ms,
                history: l.history,
            })
            .collect();
        Ok((total, dead))
    }

    /// A page of the jobs in `state` and how many that state holds: ready by priority (FIFO
    /// within one), delayed by due time, processing by lease deadline, dead most recent first.
    pub async fn list(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> AppResult<(u64, Vec<ListedJob>)> {
        if limit == 0 {
            let c = self.counts().await?;
            return Ok((c.get(state), Vec::new()));
        }
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_LIST)
            .arg(state.as_str())
            .arg(offset)
            .arg(limit)
            .invoke_async(&mut c)
            .await?;
        let (_, r) = reply::split(v)?;
        let total = r
            .first()
            .and_then(reply::int)
            .ok_or_else(|| reply::bad("total"))?
            .max(0) as u64;
        let mut jobs = Vec::new();
        for e in r[1..].chunks_exact(5) {
            // A body gone (a `take` cut short) is no job to show.
            if e.get(1).and_then(reply::text).is_none_or(|b| b.is_empty()) {
                continue;
            }
            let history = match e.get(4).and_then(reply::text).as_deref() {
                None | Some("") => Vec::new(),
                Some(h) => serde_json::from_str(h).map_err(|_| reply::bad("history"))?,
            };
            jobs.push(ListedJob {
                job: job(e.get(1), e.get(2))?,
                at_ms: e
                    .get(3)
                    .and_then(reply::int)
                    .ok_or_else(|| reply::bad("score"))?,
                history,
            });
        }
        Ok((total, jobs))
    }

    /// Deletes one job that is ready, delayed or dead, and says which it was; `conflict` when
    /// it is being processed (a worker holds its lease), `not_found` when it is not there.
    pub async fn delete(&self, id: &Id) -> AppResult<JobState> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_DELETE)
            .arg(id.as_str())
            .invoke_async(&mut c)
            .await?;
        let (_, r) = reply::split(v)?;
        r.first()
            .and_then(reply::text)
            .and_then(|s| JobState::parse(&s))
            .ok_or_else(|| reply::bad("state"))
    }

    /// Deletes up to `limit` jobs of `state` (ready, delayed or dead; `bad_request` for
    /// processing, whose jobs workers hold) in one step. Returns (deleted, left in `state`).
    pub async fn purge(&self, state: JobState, limit: u64) -> AppResult<(u64, u64)> {
        if state == JobState::Processing {
            return Err(AppError::bad_request(
                "processing jobs cannot be purged: workers hold their leases",
            ));
        }
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_PURGE)
            .arg(state.as_str())
            .arg(limit.max(1))
            .invoke_async(&mut c)
            .await?;
        Self::done_and_left(v)
    }

    /// Brings up to `limit` dead letters back to ready (the longest dead first), each with a
    /// fresh set of attempts, in one step. Returns (retried, left in dead).
    pub async fn retry_all(&self, limit: u64) -> AppResult<(u64, u64)> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_RETRY_ALL)
            .arg(limit.max(1))
            .invoke_async(&mut c)
            .await?;
        Self::done_and_left(v)
    }

    fn done_and_left(v: Value) -> AppResult<(u64, u64)> {
        let (_, r) = reply::split(v)?;
        let n = |i: usize| {
            r.get(i)
                .and_then(reply::int)
                .map(|n| n.max(0) as u64)
                .ok_or_else(|| reply::bad("count"))
        };
        Ok((n(0)?, n(1)?))
    }

    /// Brings a dead letter back to ready with a fresh set of attempts (`not_found` if none).
    pub async fn retry(&self, id: &Id) -> AppResult<()> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(&scripts::Q_RETRY)
            .arg(id.as_str())
            .invoke_async(&mut c)
            .await?;
        reply::split(v).map(|_| ())
    }

    /// One promoter step: due delayed jobs to ready, at most `promote_batch`.
    pub async fn promote_due(&self) -> AppResult<Sweep> {
        self.sweep(&scripts::Q_PROMOTE, false).await
    }

    /// One reaper step: lapsed leases back to ready or to dead letters, at most
    /// `promote_batch`.
    pub async fn reap(&self) -> AppResult<Sweep> {
        let sweep = self.sweep(&scripts::Q_REAP, true).await?;
        crate::metrics::JOBS
            .with_label_values(&[self.name.as_str(), "lease_lapsed"])
            .inc_by(sweep.moved + sweep.dead);
        Ok(sweep)
    }

    /// Runs a bounded maintenance script. Its reply: moved, [dead,] next_ms, now_ms.
    async fn sweep(&self, script: &'static redis::Script, counts_dead: bool) -> AppResult<Sweep> {
        let mut c = self.queues.conn();
        let v: Value = self
            .invoke(script)
            .arg(self.inner().clock.arg())
            .arg(self.inner().settings.promote_batch.max(1))
            .invoke_async(&mut c)
            .await?;
        let (_, r) = reply::split(v)?;
        let at = usize::from(counts_dead);
        Ok(Sweep {
            moved: r.first().and_then(reply::int).unwrap_or(0).max(0) as u64,
            dead: if counts_dead {
                r.get(1).and_then(reply::int).unwrap_or(0).max(0) as u64
            } else {
                0
            },
            next_ms: r.get(1 + at).and_then(reply::int).filter(|t| *t >= 0),
            now_ms: r
                .get(2 + at)
                .and_then(reply::int)
                .ok_or_else(|| reply::bad("now"))?,
        })
    }
}
