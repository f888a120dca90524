//! Queue endpoints for workers in any language (`docs/queues.md`; admin token). A long-poll claim
//! (`wait_ms`) waits on a dedicated Redis connection, never on the shared one.

use std::time::Duration;

use actix_web::{delete, get, post, web, HttpResponse};
use scorecast_shared::Id;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::extract::{Admin, Object, Reader};
use crate::error::{AppError, AppResult};
use crate::queue::{
    Attempt, Claimed, Counts, JobState, Lease, NewJob, When, MAX_ATTEMPTS, MAX_BULK_JOBS,
    MAX_CLAIM_BATCH, MAX_PRIORITY,
};
use crate::state::AppState;

/// Longest lease a claim or extend may ask for (a day).
pub const MAX_LEASE_MS: u64 = 86_400_000;
/// Most dead letters (or jobs of any state) per page.
pub const MAX_DEAD_PAGE: u64 = 1000;
/// Most jobs one purge deletes, or one retry-all brings back (call again for the rest).
pub const MAX_SWEEP: u64 = 1000;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnqueueBody {
    /// 1–64 chars of `[A-Za-z0-9_.-]`, unique among the jobs present; generated when absent.
    pub id: Option<String>,
    /// What the job is (an id: `email`, `season.rollover`).
    pub kind: String,
    /// Any JSON, stored and returned exactly as sent.
    #[schema(value_type = Option<serde_json::Value>)]
    pub payload: Option<Box<RawValue>>,
    /// 0 (most urgent) ..= 9; default 5.
    pub priority: Option<i64>,
    /// Ready at this time (ms since the epoch), at most 366 days from now. Not with `delay_ms`.
    pub run_at_ms: Option<i64>,
    /// Ready after this many ms, at most 366 days. Not with `run_at_ms`.
    pub delay_ms: Option<i64>,
    /// Claims before the job goes to dead letters; default 5.
    pub max_attempts: Option<i64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Enqueued {
    pub id: String,
}

fn queue(st: &AppState, name: &str) -> AppResult<crate::queue::Queue> {
    Ok(st.queues.get(&AppState::id(name)?))
}

/// Checks an enqueue body completely before anything reaches Redis.
fn new_job(body: EnqueueBody) -> AppResult<NewJob> {
    let id = body.id.as_deref().map(AppState::id).transpose()?;
    let kind = AppState::id(&body.kind)?;
    let priority = match body.priority {
        None => None,
        Some(p) if (0..=i64::from(MAX_PRIORITY)).contains(&p) => Some(p as u8),
        Some(p) => {
            return Err(AppError::bad_request(format!(
                "priority {p} is out of range: 0..={MAX_PRIORITY}, 0 is the most urgent"
            )))
        }
    };
    let max_attempts = match body.max_attempts {
        None => None,
        Some(n) if (1..=i64::from(MAX_ATTEMPTS)).contains(&n) => Some(n as u32),
        Some(n) => {
            return Err(AppError::bad_request(format!(
                "max_attempts {n} is out of range: 1..={MAX_ATTEMPTS}"
            )))
        }
    };
    let when = match (body.run_at_ms, body.delay_ms) {
        (Some(_), Some(_)) => {
            return Err(AppError::bad_request(
                "give run_at_ms or delay_ms, not both",
            ))
        }
        (Some(t), None) if t < 0 => return Err(AppError::bad_request("run_at_ms must be >= 0")),
        (Some(t), None) => When::At(t),
        (None, Some(d)) if d < 0 => return Err(AppError::bad_request("delay_ms must be >= 0")),
        (None, Some(d)) => When::In(d as u64),
        (None, None) => When::Now,
    };
    // unwrap: "null" is valid JSON.
    let payload = body
        .payload
        .unwrap_or_else(|| RawValue::from_string("null".into()).unwrap());
    let mut job = NewJob::raw(kind, payload);
    job.id = id;
    job.priority = priority;
    job.max_attempts = max_attempts;
    job.when = when;
    Ok(job)
}

/// Enqueues a job (delayed with `run_at_ms` / `delay_ms`). An id present in the queue: 409.
#[utoipa::path(params(("q" = String, Path)), request_body = EnqueueBody, responses((status = 201, body = Enqueued), (status = 400), (status = 409)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/jobs")]
pub async fn enqueue(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<EnqueueBody>,
) -> AppResult<HttpResponse> {
    let q = queue(&st, &path)?;
    let job = new_job(body.into_inner())?;
    let id = q.enqueue(job).await?;
    Ok(HttpResponse::Created().json(Enqueued {
        id: id.into_string(),
    }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    /// 1–1000 jobs, each as `POST /admin/queues/{q}/jobs` takes one (the whole request at
    /// most 64 KiB).
    #[serde(deserialize_with = "each_job")]
    pub jobs: Vec<EnqueueBody>,
}

/// The jobs of a bulk enqueue, each read on its own, so that a malformed one is named
/// (`jobs[i]: ...`) as a job refused by its checks is.
fn each_job<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<EnqueueBody>, D::Error> {
    use serde::de::Error as _;
    let raw: Vec<Box<serde_json::value::RawValue>> = Deserialize::deserialize(d)?;
    raw.iter()
        .enumerate()
        .map(|(i, r)| {
            super::extract::object(r.get()).map_err(|e| D::Error::custom(format!("jobs[{i}]: {e}")))
        })
        .collect()
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BulkEnqueued {
    /// The jobs' ids, in the order given.
    pub ids: Vec<String>,
}

/// Enqueues many jobs in one step, all or none: one bad job is 400 (naming `jobs[i]`), one id
/// already in the queue 409, and then nothing is enqueued.
#[utoipa::path(params(("q" = String, Path)), request_body = BulkBody, responses((status = 201, body = BulkEnqueued), (status = 400), (status = 409)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/jobs/bulk")]
pub async fn enqueue_bulk(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    body: Object<BulkBody>,
) -> AppResult<HttpResponse> {
    let q = queue(&st, &path)?;
    let body = body.into_inner();
    if !(1..=MAX_BULK_JOBS).contains(&body.jobs.len()) {
        return Err(AppError::bad_request(format!(
            "jobs must hold 1..={MAX_BULK_JOBS} jobs, got {}",
            body.jobs.len()
        )));
    }
    let jobs = body
        .jobs
        .into_iter()
        .enumerate()
        .map(|(i, j)| {
            new_job(j).map_err(|e| AppError::new(e.code, format!("jobs[{i}]: {}", e.message)))
        })
        .collect::<AppResult<Vec<_>>>()?;
    let placed = q.enqueue_bulk(jobs).await?;
    Ok(HttpResponse::Created().json(BulkEnqueued {
        ids: placed.into_iter().map(|(id, _)| id.into_string()).collect(),
    }))
}

/// Jobs per state.
#[utoipa::path(params(("q" = String, Path)), responses((status = 200, body = Counts)), tag = "queues", security(("admin" = [])))]
#[get("/admin/queues/{q}")]
pub async fn counts(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let q = queue(&st, &path)?;
    Ok(HttpResponse::Ok().json(q.counts().await?))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ClaimQuery {
    /// Wait up to this long for a job (0 ..= max_wait_ms, default 0).
    pub wait_ms: Option<u64>,
    /// Lease length (1 ..= 86400000, default 30000).
    pub lease_ms: Option<u64>,
    /// Claim up to this many jobs in one step (1 ..= 100); the answer is then
    /// `{"claims":[{"job","lease"}, ...]}`, each job with a lease of its own.
    pub max: Option<usize>,
}

/// A claimed job as a worker sees it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ClaimedJob<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    #[schema(value_type = serde_json::Value)]
    pub payload: &'a RawValue,
    pub priority: u8,
    pub attempts: u32,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ClaimResponse<'a> {
    pub job: ClaimedJob<'a>,
    pub lease: Lease,
}

/// The answer of a claim with `max`: one entry per job claimed (at least one).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ClaimsResponse<'a> {
    pub claims: Vec<ClaimResponse<'a>>,
}

/// A claim's answer: one job without `max`, every job claimed with it.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ClaimAnswer<'a> {
    One(ClaimResponse<'a>),
    Many(ClaimsResponse<'a>),
}

fn claim_response(c: &Claimed) -> ClaimResponse<'_> {
    ClaimResponse {
        job: ClaimedJob {
            id: &c.job.id,
            kind: &c.job.kind,
            payload: &c.job.payload,
            priority: c.job.priority,
            attempts: c.job.attempts,
        },
        lease: c.lease.clone(),
    }
}

/// `200` with the claimed jobs (`{"job","lease"}`, or `{"claims":[...]}` when `max` was given),
/// `204` when none came.
fn claimed_answer(claimed: &[Claimed], max: Option<usize>) -> HttpResponse {
    match (claimed, max) {
        ([], _) => HttpResponse::NoContent().finish(),
        ([c, ..], None) => HttpResponse::Ok().json(ClaimAnswer::One(claim_response(c))),
        (all, Some(_)) => HttpResponse::Ok().json(ClaimAnswer::Many(ClaimsResponse {
            claims: all.iter().map(claim_response).collect(),
        })),
    }
}

/// The lease and batch size of a claim: defaults, and `bad_request` out of bounds.
fn lease_and_max(
    st: &AppState,
    lease_ms: Option<u64>,
    max: Option<usize>,
) -> AppResult<(Duration, usize)> {
    let lease_ms = lease_ms.unwrap_or(st.settings.queues.default_lease_ms);
    if !(1..=MAX_LEASE_MS).contains(&lease_ms) {
        return Err(AppError::bad_request(format!(
            "lease_ms must be 1..={MAX_LEASE_MS}"
        )));
    }
    let max = max.unwrap_or(1);
    if !(1..=MAX_CLAIM_BATCH).contains(&max) {
        return Err(AppError::bad_request(format!(
            "max must be 1..={MAX_CLAIM_BATCH}"
        )));
    }
    Ok((Duration::from_millis(lease_ms), max))
}

/// Claims the best ready job (or up to `max` of them) under a lease (at-least-once), waiting
/// up to `wait_ms`; 204 when none came.
#[utoipa::path(params(("q" = String, Path), ClaimQuery), responses((status = 200, body = ClaimAnswer, description = "`{\"job\",\"lease\"}` without `max`; with it `{\"claims\":[...]}`"), (status = 204), (status = 400)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/claim")]
pub async fn claim(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<ClaimQuery>,
) -> AppResult<HttpResponse> {
    let q = queue(&st, &path)?;
    let s = &st.settings.queues;
    let wait_ms = query.wait_ms.unwrap_or(0);
    if wait_ms > s.max_wait_ms {
        return Err(AppError::bad_request(format!(
            "wait_ms must be 0..={}",
            s.max_wait_ms
        )));
    }
    let (lease, max) = lease_and_max(&st, query.lease_ms, query.max)?;
    let claimed = if wait_ms == 0 {
        q.claim_batch(lease, max).await?
    } else {
        q.claim_batch_wait(lease, max, Duration::from_millis(wait_ms))
            .await?
    };
    Ok(claimed_answer(&claimed, query.max))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckBody {
    pub token: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackBody {
    pub token: String,
    /// Back in ready after this long (at most 366 days); default: exponential backoff with
    /// jitter.
    pub delay_ms: Option<u64>,
    /// Why the attempt failed (at most 500 characters), kept in the job's attempt history.
    pub reason: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendBody {
    pub token: String,
    /// New lease length from now (default 30000).
    pub lease_ms: Option<u64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LeaseResponse {
    pub lease: Lease,
}

fn job_path(st: &AppState, path: &(String, String)) -> AppResult<(crate::queue::Queue, Id)> {
    Ok((queue(st, &path.0)?, AppState::id(&path.1)?))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AckQuery {
    /// `true`: also claim the next job in the same step, and answer as `claim` does.
    pub next: Option<bool>,
    /// With `next`: the new lease's length (1 ..= 86400000, default 30000).
    pub lease_ms: Option<u64>,
    /// With `next`: claim up to this many (1 ..= 100), answered as `{"claims":[...]}`.
    pub max: Option<usize>,
}

/// Finishes a claimed job; with `next=true` also claims the next one(s) in the same step
/// (200 as `claim`, 204 when none was ready). A token no longer valid: 409 `lease_lost`, and
/// nothing is acked or claimed.
#[utoipa::path(params(("q" = String, Path), ("id" = String, Path), AckQuery), request_body = AckBody, responses((status = 200, body = ClaimAnswer, description = "with `next=true`: as `claim`"), (status = 204), (status = 400), (status = 409)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/jobs/{id}/ack")]
pub async fn ack(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<AckQuery>,
    body: Object<AckBody>,
) -> AppResult<HttpResponse> {
    let (q, id) = job_path(&st, &path)?;
    if query.next != Some(true) {
        if query.lease_ms.is_some() || query.max.is_some() {
            return Err(AppError::bad_request("lease_ms and max go with next=true"));
        }
        q.ack(&id, &body.token).await?;
        return Ok(HttpResponse::NoContent().finish());
    }
    let (lease, max) = lease_and_max(&st, query.lease_ms, query.max)?;
    let claimed = q
        .ack_batch_next(&[(&id, body.token.as_str())], lease, max)
        .await?;
    Ok(claimed_answer(&claimed, query.max))
}

/// Gives a claimed job back (after `delay_ms`, else backoff); dead letters past max_attempts.
#[utoipa::path(params(("q" = String, Path), ("id" = String, Path)), request_body = NackBody, responses((status = 204), (status = 409)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/jobs/{id}/nack")]
pub async fn nack(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Object<NackBody>,
) -> AppResult<HttpResponse> {
    let (q, id) = job_path(&st, &path)?;
    q.nack_because(
        &id,
        &body.token,
        body.delay_ms.map(Duration::from_millis),
        body.reason.as_deref(),
    )
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Extends a live lease to now + `lease_ms`.
#[utoipa::path(params(("q" = String, Path), ("id" = String, Path)), request_body = ExtendBody, responses((status = 200, body = LeaseResponse), (status = 409)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/jobs/{id}/extend")]
pub async fn extend(
    _: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Object<ExtendBody>,
) -> AppResult<HttpResponse> {
    let (q, id) = job_path(&st, &path)?;
    let lease_ms = body.lease_ms.unwrap_or(st.settings.queues.default_lease_ms);
    if !(1..=MAX_LEASE_MS).contains(&lease_ms) {
        return Err(AppError::bad_request(format!(
            "lease_ms must be 1..={MAX_LEASE_MS}"
        )));
    }
    let lease = q
        .extend(&id, &body.token, Duration::from_millis(lease_ms))
        .await?;
    Ok(HttpResponse::Ok().json(LeaseResponse { lease }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct DeadView<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    #[schema(value_type = serde_json::Value)]
    pub payload: &'a RawValue,
    pub priority: u8,
    pub attempts: u32,
    pub max_attempts: u32,
    pub died_at_ms: i64,
    /// Its failed attempts, oldest first (the last ten).
    pub history: &'a [Attempt],
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct DeadList<'a> {
    /// Dead letters in all (the page may hold fewer).
    pub total: u64,
    pub jobs: Vec<DeadView<'a>>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct DeadQuery {
    /// 1–1000, default 100.
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// Dead letters, most recent first.
#[utoipa::path(params(("q" = String, Path), DeadQuery), responses((status = 200, body = DeadList)), tag = "queues", security(("admin" = [])))]
#[get("/admin/queues/{q}/dead")]
pub async fn dead(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<DeadQuery>,
) -> AppResult<HttpResponse> {
    let q = queue(&st, &path)?;
    let (offset, limit) = paging(query.offset, query.limit)?;
    let (total, dead) = q.dead(offset, limit).await?;
    let jobs = dead
        .iter()
        .map(|d| DeadView {
            id: &d.job.id,
            kind: &d.job.kind,
            payload: &d.job.payload,
            priority: d.job.priority,
            attempts: d.job.attempts,
            max_attempts: d.job.max_attempts,
            died_at_ms: d.died_at_ms,
            history: &d.history,
        })
        .collect();
    Ok(HttpResponse::Ok().json(DeadList { total, jobs }))
}

/// Offset and limit of a page: limit 1..=[`MAX_DEAD_PAGE`] (default 100), offset up to the
/// public reads' bound; `bad_request` otherwise.
fn paging(offset: Option<u64>, limit: Option<u64>) -> AppResult<(u64, u64)> {
    let limit = limit.unwrap_or(100);
    if !(1..=MAX_DEAD_PAGE).contains(&limit) {
        return Err(AppError::bad_request(format!(
            "limit must be 1..={MAX_DEAD_PAGE}"
        )));
    }
    let offset = offset.unwrap_or(0);
    if offset > super::public::MAX_OFFSET {
        return Err(AppError::bad_request(format!(
            "offset must be 0..={}",
            super::public::MAX_OFFSET
        )));
    }
    Ok((offset, limit))
}

/// A queue that has had a job; `not_found` otherwise (nothing to list, purge or retry).
async fn known_queue(st: &AppState, name: &str) -> AppResult<crate::queue::Queue> {
    let q = queue(st, name)?;
    if !st.queues.exists(q.name()).await? {
        return Err(AppError::new(
            scorecast_shared::ErrorCode::NotFound,
            format!("no queue {name}"),
        ));
    }
    Ok(q)
}

/// `state=` of a listing or a purge: one of ready, delayed, processing, dead.
fn job_state(s: &str) -> AppResult<JobState> {
    JobState::parse(s).ok_or_else(|| {
        AppError::bad_request(format!(
            "state {s:?} is not one of ready, delayed, processing, dead"
        ))
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct JobsQuery {
    /// `ready` (by priority, FIFO within one), `delayed` (by due time), `processing` (by lease
    /// deadline) or `dead` (most recent first).
    pub state: String,
    /// 1–1000, default 100.
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// A job as the queue browser shows it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct JobView<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    #[schema(value_type = serde_json::Value)]
    pub payload: &'a RawValue,
    pub priority: u8,
    /// Claims so far.
    pub attempts: u32,
    pub max_attempts: u32,
    /// Delayed: when it becomes ready (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_at_ms: Option<i64>,
    /// Processing: when its lease lapses (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_expires_at_ms: Option<i64>,
    /// Dead: when it died (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub died_at_ms: Option<i64>,
    /// Its failed attempts, oldest first (the last ten).
    pub history: &'a [Attempt],
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct JobList<'a> {
    pub state: JobState,
    /// Jobs in that state in all (the page may hold fewer).
    pub total: u64,
    pub jobs: Vec<JobView<'a>>,
}

/// A page of one state's jobs with their payloads: ready by priority (FIFO within one), delayed
/// by due time, processing by lease deadline, dead most recent first. Unknown queue: 404.
#[utoipa::path(params(("q" = String, Path), JobsQuery), responses((status = 200, body = JobList), (status = 400), (status = 404)), tag = "queues", security(("admin" = [])))]
#[get("/admin/queues/{q}/jobs")]
pub async fn list_jobs(
    _: Reader,
    st: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<JobsQuery>,
) -> AppResult<HttpResponse> {
    let state = job_state(&query.state)?;
    let (offset, limit) = paging(query.offset, query.limit)?;
    let q = known_queue(&st, &path).await?;
    let (total, listed) = q.list(state, offset, limit).await?;
    let at = |s: JobState, t: i64| (state == s).then_some(t);
    let jobs = listed
        .iter()
        .map(|l| JobView {
            id: &l.job.id,
            kind: &l.job.kind,
            payload: &l.job.payload,
            priority: l.job.priority,
            attempts: l.job.attempts,
            max_attempts: l.job.max_attempts,
            run_at_ms: at(JobState::Delayed, l.at_ms),
            lease_expires_at_ms: at(JobState::Processing, l.at_ms),
            died_at_ms: at(JobState::Dead, l.at_ms),
            history: &l.history,
        })
        .collect();
    Ok(HttpResponse::Ok().json(JobList { state, total, jobs }))
}

/// Deletes one job that is ready, delayed or dead (409 `conflict` while it is being processed:
/// a worker holds its lease; 404 when it is not in the queue).
#[utoipa::path(params(("q" = String, Path), ("id" = String, Path)), responses((status = 204), (status = 404), (status = 409)), tag = "queues", security(("admin" = [])))]
#[delete("/admin/queues/{q}/jobs/{id}")]
pub async fn delete_job(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> AppResult<HttpResponse> {
    let (q, id) = job_path(&st, &path)?;
    let was = q.delete(&id).await?;
    tracing::info!(queue = %path.0, job = %id, state = was.as_str(), key = %key.0, "job deleted");
    st.store
        .audit(
            key.0.as_str(),
            "job_delete",
            &[
                ("queue", path.0.as_str()),
                ("job", id.as_str()),
                ("state", was.as_str()),
            ],
        )
        .await;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PurgeQuery {
    /// `ready`, `delayed` or `dead` (not `processing`: workers hold those jobs).
    pub state: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Swept {
    /// Jobs deleted (purge) or brought back to ready (retry all) by this call, at most 1000.
    pub done: u64,
    /// Jobs still in that state: call again while this is above 0.
    pub left: u64,
}

/// Deletes the jobs of one state (ready, delayed or dead), at most 1000 per call (`left` says
/// how many remain). `state=processing`: 400, nothing deleted. Unknown queue: 404.
#[utoipa::path(params(("q" = String, Path), PurgeQuery), responses((status = 200, body = Swept), (status = 400), (status = 404)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/purge")]
pub async fn purge(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<PurgeQuery>,
) -> AppResult<HttpResponse> {
    let state = job_state(&query.state)?;
    if state == JobState::Processing {
        return Err(AppError::bad_request(
            "processing jobs cannot be purged: workers hold their leases",
        ));
    }
    let q = known_queue(&st, &path).await?;
    let (done, left) = q.purge(state, MAX_SWEEP).await?;
    tracing::info!(queue = %path, state = state.as_str(), done, key = %key.0, "queue purged");
    let n = done.to_string();
    st.store
        .audit(
            key.0.as_str(),
            "queue_purge",
            &[
                ("queue", path.as_str()),
                ("state", state.as_str()),
                ("jobs", n.as_str()),
            ],
        )
        .await;
    Ok(HttpResponse::Ok().json(Swept { done, left }))
}

/// Brings every dead letter back to ready with fresh attempts (the longest dead first), at most
/// 1000 per call (`left` says how many remain). Unknown queue: 404.
#[utoipa::path(params(("q" = String, Path)), responses((status = 200, body = Swept), (status = 404)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/dead/retry")]
pub async fn retry_all(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<String>,
) -> AppResult<HttpResponse> {
    let q = known_queue(&st, &path).await?;
    let (done, left) = q.retry_all(MAX_SWEEP).await?;
    tracing::info!(queue = %path, done, key = %key.0, "dead letters retried");
    let n = done.to_string();
    st.store
        .audit(
            key.0.as_str(),
            "dead_letter_retry_all",
            &[("queue", path.as_str()), ("jobs", n.as_str())],
        )
        .await;
    Ok(HttpResponse::Ok().json(Swept { done, left }))
}

/// Brings a dead letter back to ready with fresh attempts; 404 when it is not dead.
#[utoipa::path(params(("q" = String, Path), ("id" = String, Path)), responses((status = 204), (status = 404)), tag = "queues", security(("admin" = [])))]
#[post("/admin/queues/{q}/dead/{id}/retry")]
pub async fn retry(
    key: Admin,
    st: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> AppResult<HttpResponse> {
    let (q, id) = job_path(&st, &path)?;
    q.retry(&id).await?;
    tracing::info!(queue = %path.0, job = %id, key = %key.0, "dead letter retried");
    st.store
        .audit(
            key.0.as_str(),
            "dead_letter_retry",
            &[("queue", path.0.as_str()), ("job", id.as_str())],
        )
        .await;
    Ok(HttpResponse::NoContent().finish())
}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(enqueue)
        .service(enqueue_bulk)
        .service(counts)
        .service(claim)
        .service(ack)
        .service(nack)
        .service(extend)
        .service(dead)
        .service(list_jobs)
        .service(delete_job)
        .service(purge)
        .service(retry_all)
        .service(retry);
}
