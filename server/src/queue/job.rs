//! What the queues hold and hand out: jobs as stored, jobs to enqueue, leases, and the answers
//! of the queue operations.

use redis::Value;
use scorecast_shared::Id;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{AppError, AppResult};
use crate::reply;

/// A job as stored: `{id, kind, payload, priority, max_attempts}` plus its attempts so far.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub kind: String,
    /// Exactly the JSON text the client sent.
    pub payload: Box<RawValue>,
    pub priority: u8,
    #[serde(default)]
    pub attempts: u32,
    pub max_attempts: u32,
}

impl Job {
    /// The payload parsed as `T`.
    pub fn payload_as<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.payload.get())
    }
}

/// When a new job becomes ready.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    #[default]
    Now,
    /// At this time (ms since the epoch, on the queue's clock).
    At(i64),
    /// After this many ms.
    In(u64),
}

/// A job to enqueue. `NewJob::new(kind, payload)` then the builder methods.
#[derive(Clone, Debug)]
pub struct NewJob {
    /// `None`: a fresh uuid.
    pub id: Option<Id>,
    pub kind: Id,
    pub payload: Box<RawValue>,
    /// `None`: the configured default (5).
    pub priority: Option<u8>,
    /// `None`: the configured default (5).
    pub max_attempts: Option<u32>,
    pub when: When,
}

impl NewJob {
    /// A job of `kind` whose payload is `payload` serialised.
    pub fn new(kind: &Id, payload: &impl Serialize) -> AppResult<NewJob> {
        let payload = serde_json::value::to_raw_value(payload)
            .map_err(|e| AppError::bad_request(format!("payload: {e}")))?;
        Ok(NewJob::raw(kind.clone(), payload))
    }

    /// A job whose payload is already JSON text (kept byte for byte).
    pub fn raw(kind: Id, payload: Box<RawValue>) -> NewJob {
        NewJob {
            id: None,
            kind,
            payload,
            priority: None,
            max_attempts: None,
            when: When::Now,
        }
    }

    pub fn id(mut self, id: Id) -> NewJob {
        self.id = Some(id);
        self
    }

    pub fn priority(mut self, p: u8) -> NewJob {
        self.priority = Some(p);
        self
    }

    pub fn max_attempts(mut self, n: u32) -> NewJob {
        self.max_attempts = Some(n);
        self
    }

    pub fn at(mut self, run_at_ms: i64) -> NewJob {
        self.when = When::At(run_at_ms);
        self
    }

    pub fn after(mut self, delay_ms: u64) -> NewJob {
        self.when = When::In(delay_ms);
        self
    }
}

/// The stored body: what `q:{<q>}:jobs` holds (attempts live in the state hash).
#[derive(Serialize)]
pub(super) struct Body<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub payload: &'a RawValue,
    pub priority: u8,
    pub max_attempts: u32,
}

/// Where an enqueued job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    Ready,
    /// In the delayed set until `run_at_ms`.
    Delayed {
        run_at_ms: i64,
    },
}

/// A lease on a claimed job: valid until acked, nacked, reaped or re-claimed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Lease {
    pub token: String,
    pub expires_at_ms: i64,
}

#[derive(Clone, Debug)]
pub struct Claimed {
    pub job: Job,
    pub lease: Lease,
}

/// Where a nacked job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeued {
    Ready,
    Delayed {
        run_at_ms: i64,
        delay_ms: i64,
    },
    /// No attempt left: in dead letters.
    Dead,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Counts {
    pub ready: u64,
    pub delayed: u64,
    pub processing: u64,
    pub dead: u64,
}

impl Counts {
    /// How many jobs `state` holds.
    pub fn get(&self, state: JobState) -> u64 {
        match state {
            JobState::Ready => self.ready,
            JobState::Delayed => self.delayed,
            JobState::Processing => self.processing,
            JobState::Dead => self.dead,
        }
    }
}

/// The four states a job can be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Ready,
    Delayed,
    Processing,
    Dead,
}

impl JobState {
    pub const ALL: [JobState; 4] = [
        JobState::Ready,
        JobState::Delayed,
        JobState::Processing,
        JobState::Dead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Ready => "ready",
            JobState::Delayed => "delayed",
            JobState::Processing => "processing",
            JobState::Dead => "dead",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// A job as a listing shows it.
#[derive(Clone, Debug)]
pub struct ListedJob {
    pub job: Job,
    /// Its time in its state's set: delayed, when due; processing, the lease deadline; dead,
    /// when it died (ms since the epoch). Ready: its place (priority × 1e13 + n), not a time.
    pub at_ms: i64,
    /// Its failed attempts, oldest first (the last ten).
    pub history: Vec<Attempt>,
}

#[derive(Clone, Debug)]
pub struct DeadJob {
    pub job: Job,
    pub died_at_ms: i64,
    /// Its failed attempts, oldest first (the last ten).
    pub history: Vec<Attempt>,
}

/// One failed attempt of a job: a nack, or a lease that lapsed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Attempt {
    /// Which attempt (1 = the first claim).
    pub attempt: u32,
    /// The first 8 characters of that attempt's lease token, to tell workers' leases apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// When it failed (ms since the epoch, on the queue's clock).
    pub at_ms: i64,
    /// The nack's reason, or `lease lapsed`; absent when a nack gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What one promoter or reaper step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Jobs moved to ready.
    pub moved: u64,
    /// Jobs moved to dead letters (reaper only).
    pub dead: u64,
    /// The next due time (promoter) or lease deadline (reaper), if any.
    pub next_ms: Option<i64>,
    /// The clock the step ran at.
    pub now_ms: i64,
}

/// A job from its stored body and attempts.
pub(super) fn job(body: Option<&Value>, attempts: Option<&Value>) -> AppResult<Job> {
    let body = body
        .and_then(reply::text)
        .ok_or_else(|| reply::bad("job body"))?;
    let mut job: Job = serde_json::from_str(&body).map_err(|_| reply::bad("job body JSON"))?;
    job.attempts = attempts
        .and_then(reply::int)
        .ok_or_else(|| reply::bad("attempts"))?
        .max(0) as u32;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_body_keeps_the_payload_byte_for_byte() {
        let raw = r#"{"big":12345678901234567890123,"empty":[],"f":1.0}"#;
        let payload = RawValue::from_string(raw.to_owned()).unwrap();
        let body = serde_json::to_string(&Body {
            id: "j",
            kind: "k",
            payload: &payload,
            priority: 5,
            max_attempts: 5,
        })
        .unwrap();
        let job: Job = serde_json::from_str(&body).unwrap();
        assert_eq!(job.payload.get(), raw);
        assert_eq!(job.attempts, 0);
    }
}
