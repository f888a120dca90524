//! Enqueueing: a job is checked and its stored body built here ([`Queue::prepare`]), then written
//! by `lua/q_enqueue.lua`. Single enqueues to one queue are group-committed: those that arrive
//! while the queue's previous call is in flight go to Redis together in its next call
//! (`crate::lanes`), each answered on its own; a bulk enqueue is one all-or-nothing call.

use std::sync::Arc;
use std::time::Duration;

use redis::{AsyncCommands, Value};
use scorecast_shared::{ErrorCode, Id};
use tokio::sync::oneshot;

use super::{
    fresh_token, Body, NewJob, Placed, Queue, When, MAX_ATTEMPTS, MAX_BULK_BYTES, MAX_BULK_JOBS,
    MAX_PRIORITY, MAX_SCHEDULE_AHEAD_MS,
};
use crate::error::{AppError, AppResult};
use crate::lanes::Lane;
use crate::{keys, reply, scripts};

/// How often an instance writes a queue's name to the `sc:queues` index again while it
/// enqueues (the index only grows, so once is enough unless Redis lost it).
const INDEX_AGAIN: Duration = Duration::from_secs(1);

/// A queue's enqueue lane stops after this long without enqueues.
pub(super) const LANE_IDLE: Duration = Duration::from_secs(30);

/// A single enqueue waiting for its lane's next call, and where its answer goes.
pub(super) type PendingJob = (Prepared, oneshot::Sender<AppResult<(Id, Placed)>>);

/// Script calls one queue's enqueue lane keeps in flight at once: while one runs in Redis the
/// next is on its way, so Redis is not left idle while answers go back and new enqueues come in.
const LANE_IN_FLIGHT: usize = 2;

/// Writes a queue's waiting single enqueues, as many as fit one bulk (count and bytes) per
/// script call, each on its own, until the lane retires; at most [`LANE_IN_FLIGHT`] calls at a
/// time. (Two calls in flight hold enqueues that were waiting at the same time, so the order
/// Redis runs them in is no promise broken.)
async fn run_enqueues(queue: Queue, mut lane: Lane<PendingJob>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(LANE_IN_FLIGHT));
    loop {
        // Never closed: an error is impossible.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut batch: Vec<PendingJob> = Vec::new();
        // The stored bytes of the batch so far, from its first job on.
        let mut bytes = None;
        let more = lane
            .next(&mut batch, |b, (p, _)| {
                let total = bytes.get_or_insert(b[0].0.body.len());
                *total += p.body.len();
                b.len() < MAX_BULK_JOBS && *total <= MAX_BULK_BYTES
            })
            .await;
        if !more {
            return;
        }
        let queue = queue.clone();
        tokio::spawn(async move {
            let placed = queue.store(batch.iter().map(|(p, _)| p), true).await;
            drop(slot);
            match placed {
                Ok(placed) => {
                    for ((p, tx), placed) in batch.into_iter().zip(placed) {
                        let _ = tx.send(placed.map(|placed| (p.id, placed)));
                    }
                }
                Err(e) => {
                    for (_, tx) in batch {
                        let _ = tx.send(Err(e.clone()));
                    }
                }
            }
        });
    }
}

/// A job checked and ready to store.
pub(super) struct Prepared {
    id: Id,
    body: String,
    priority: u8,
    max_attempts: u32,
    when: When,
}

impl Queue {
    /// Adds a job (priority 0–9; FIFO within a priority). Its id must not be present in the
    /// queue (`conflict`); it may be reused once the job is gone. Returns the id.
    pub async fn enqueue(&self, job: NewJob) -> AppResult<Id> {
        self.enqueue_placed(job).await.map(|(id, _)| id)
    }

    /// Schedules a job to become ready at `run_at_ms` (with its priority).
    pub async fn schedule(&self, job: NewJob, run_at_ms: i64) -> AppResult<Id> {
        self.enqueue(job.at(run_at_ms)).await
    }

    /// [`Queue::enqueue`], also saying where the job went.
    ///
    /// Group commit: single enqueues to one queue that arrive while its previous enqueue call
    /// is in flight go to Redis together in the next call (`crate::lanes`), each checked and
    /// answered on its own, exactly as if they had come one after another.
    pub async fn enqueue_placed(&self, job: NewJob) -> AppResult<(Id, Placed)> {
        let p = self.prepare(job, self.inner().clock.now_ms())?;
        let (tx, rx) = oneshot::channel();
        let queue = self.clone();
        let gone = || AppError::new(ErrorCode::Unavailable, "the enqueue lane stopped");
        if self
            .inner()
            .enqueues
            .send(&self.name, (p, tx), |lane| {
                run_enqueues(queue.clone(), lane)
            })
            .is_err()
        {
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Adds many jobs in one step (one script call), all-or-nothing: 1..=[`MAX_BULK_JOBS`]
    /// jobs whose stored bodies add up to at most [`MAX_BULK_BYTES`]; every job is checked as
    /// [`Queue::enqueue`] checks one (`bad_request`, naming the job's place in the list), ids
    /// must differ (`bad_request`), and when one id is present in the queue none is enqueued
    /// (`conflict`). Returns each job's id and where it went, in order.
    pub async fn enqueue_bulk(&self, jobs: Vec<NewJob>) -> AppResult<Vec<(Id, Placed)>> {
        if !(1..=MAX_BULK_JOBS).contains(&jobs.len()) {
            return Err(AppError::bad_request(format!(
                "a bulk enqueue takes 1..={MAX_BULK_JOBS} jobs, got {}",
                jobs.len()
            )));
        }
        let now = self.inner().clock.now_ms();
        let many = jobs.len() > 1;
        let mut prepared = Vec::with_capacity(jobs.len());
        let mut bytes = 0usize;
        let mut ids = std::collections::HashSet::with_capacity(jobs.len());
        for (i, job) in jobs.into_iter().enumerate() {
            let p = self.prepare(job, now).map_err(|e| {
                if many {
                    AppError::new(e.code, format!("jobs[{i}]: {}", e.message))
                } else {
                    e
                }
            })?;
            if !ids.insert(p.id.clone()) {
                return Err(AppError::bad_request(format!(
                    "jobs[{i}]: job id {} appears twice in this call",
                    p.id
                )));
            }
            bytes += p.body.len();
            prepared.push(p);
        }
        if bytes > MAX_BULK_BYTES {
            return Err(AppError::bad_request(format!(
                "the jobs add up to {bytes} bytes; at most {MAX_BULK_BYTES} in one call"
            )));
        }
        let placed = self.store(prepared.iter(), false).await?;
        prepared
            .into_iter()
            .zip(placed)
            .map(|(p, placed)| Ok((p.id, placed?)))
            .collect()
    }

    /// Writes prepared jobs in one `lua/q_enqueue.lua` call: all-or-nothing, or `each` on its
    /// own (a present id then refuses only its job). Returns where each job went.
    async fn store<'a>(
        &self,
        prepared: impl ExactSizeIterator<Item = &'a Prepared>,
        each: bool,
    ) -> AppResult<Vec<AppResult<Placed>>> {
        let n = prepared.len();
        let mut c = self.queues.conn();
        let mut index = self.queues.conn();
        // The `sc:queues` index (which queues the promoter and the reaper look at) lives
        // outside the queue's slot, so it cannot be in the script; sent alongside it on the
        // multiplexed connection, it costs no extra round trip, and at most once per
        // INDEX_AGAIN per queue and instance, so a stream of enqueues costs Redis one command
        // each. An index entry without a job is harmless.
        let index_now = {
            let mut seen = crate::sync::lock(&self.inner().indexed);
            let now = std::time::Instant::now();
            match seen.get(&self.name) {
                Some(t) if now.duration_since(*t) < INDEX_AGAIN => false,
                _ => {
                    seen.insert(self.name.clone(), now);
                    true
                }
            }
        };
        let indexed = async {
            if index_now {
                index
                    .sadd::<_, _, ()>(keys::QUEUES, self.name.as_str())
                    .await
            } else {
                Ok(())
            }
        };
        let mut inv = self.invoke(&scripts::Q_ENQUEUE);
        inv.arg(self.inner().clock.arg())
            .arg(if each { "1" } else { "" });
        for p in prepared {
            let (when, at) = match p.when {
                When::Now => ("", String::new()),
                When::At(t) => ("at", t.to_string()),
                When::In(d) => ("in", d.to_string()),
            };
            inv.arg(p.id.as_str())
                .arg(&p.body)
                .arg(p.priority)
                .arg(p.max_attempts)
                .arg(when)
                .arg(at);
        }
        let started = std::time::Instant::now();
        let (indexed, v) = tokio::join!(indexed, inv.invoke_async::<Value>(&mut c));
        crate::metrics::script_done("q_enqueue", started);
        if indexed.is_err() {
            crate::sync::lock(&self.inner().indexed).remove(&self.name);
        }
        indexed?;
        let (_, r) = reply::split(v?)?;
        if r.len() != 1 + 2 * n {
            return Err(reply::bad("enqueue reply length"));
        }
        let mut earliest: Option<i64> = None;
        let placed = r[1..]
            .chunks_exact(2)
            .map(|e| match reply::text(&e[0]).as_deref() {
                Some("delayed") => {
                    let due = reply::int(&e[1]).ok_or_else(|| reply::bad("due"))?;
                    earliest = Some(earliest.map_or(due, |t| t.min(due)));
                    Ok(Placed::Delayed { run_at_ms: due })
                }
                Some("conflict") => Err(AppError::new(
                    ErrorCode::Conflict,
                    reply::text(&e[1]).unwrap_or_default(),
                )),
                _ => Ok(Placed::Ready),
            })
            .collect();
        // An earlier due time than the promoter planned for: wake it.
        if let Some(due) = earliest {
            self.inner().promoter.wake_if_earlier(due);
        }
        Ok(placed)
    }

    /// Checks a job completely and builds its stored body.
    fn prepare(&self, job: NewJob, now: i64) -> AppResult<Prepared> {
        let s = &self.inner().settings;
        let priority = job.priority.unwrap_or(s.default_priority);
        if priority > MAX_PRIORITY {
            return Err(AppError::bad_request(format!(
                "priority must be 0..={MAX_PRIORITY} (0 is the most urgent)"
            )));
        }
        let max_attempts = job.max_attempts.unwrap_or(s.default_max_attempts);
        if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
            return Err(AppError::bad_request(format!(
                "max_attempts must be 1..={MAX_ATTEMPTS}"
            )));
        }
        match job.when {
            When::At(t) if t > now.saturating_add(MAX_SCHEDULE_AHEAD_MS) => {
                return Err(AppError::bad_request(format!(
                    "run_at_ms may be at most {MAX_SCHEDULE_AHEAD_MS} ms (366 days) from now"
                )))
            }
            When::In(d) if d > MAX_SCHEDULE_AHEAD_MS as u64 => {
                return Err(AppError::bad_request(format!(
                    "delay_ms must be 0..={MAX_SCHEDULE_AHEAD_MS} (366 days)"
                )))
            }
            _ => {}
        }
        let id = match job.id {
            Some(id) => id,
            // unwrap: a simple uuid is 32 hex characters, a valid id.
            None => Id::parse(&fresh_token()).unwrap(),
        };
        let body = serde_json::to_string(&Body {
            id: id.as_str(),
            kind: job.kind.as_str(),
            payload: &job.payload,
            priority,
            max_attempts,
        })
        .map_err(|e| AppError::bad_request(e.to_string()))?;
        Ok(Prepared {
            id,
            body,
            priority,
            max_attempts,
            when: job.when,
        })
    }
}
