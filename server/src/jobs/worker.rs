//! Running Scorecast's jobs: claim, handle, settle (ack on success, nack with backoff on
//! failure), and the background worker tasks that do it in a loop.

use std::sync::Arc;
use std::time::Duration;

use scorecast_shared::Id;
use tokio::sync::watch;

use super::{handle, queue, Notifier};
use crate::error::{AppError, AppResult};
use crate::queue::{background, Background, Claimed, Job, Queue};
use crate::state::AppState;

/// How a worker waits for the next job (one dedicated connection per worker meanwhile).
const CLAIM_WAIT: Duration = Duration::from_secs(10);

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
            let reason: String = e
                .to_string()
                .chars()
                .take(crate::queue::MAX_REASON_CHARS)
                .collect();
            q.nack_because(&id, &c.lease.token, None, Some(&reason))
                .await?;
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
    bg.push(tokio::spawn(resume_intents(st.clone(), stop.clone())));
    for _ in 0..st.settings.queues.job_workers {
        bg.push(tokio::spawn(worker(
            st.clone(),
            notifier.clone(),
            stop.clone(),
        )));
    }
    bg
}

/// How often the intent resumer looks for bans and lifts on every board left half-applied.
pub const RESUME_EVERY: Duration = Duration::from_secs(5);

/// Applies the intents of bans and lifts on every board that are pending (`{sc:bans}:intents`,
/// `Store::apply_intent`): at start-up every one (an instance stopped mid-way left it), then
/// every [`RESUME_EVERY`] those still pending with the same version as at the previous look (so
/// an intent an instance is applying right now is normally left to it; applying one twice is
/// harmless).
async fn resume_intents(st: AppState, mut stop: watch::Receiver<bool>) {
    let mut seen: Option<Vec<(String, i64)>> = None;
    loop {
        match st.store.pending_intents().await {
            Ok(pending) => {
                let now: Vec<(String, i64)> = pending
                    .iter()
                    .map(|(p, i)| (p.clone(), i.version()))
                    .collect();
                for (player, intent) in &pending {
                    let stale = seen
                        .as_ref()
                        .is_none_or(|s| s.contains(&(player.clone(), intent.version())));
                    if !stale {
                        continue;
                    }
                    match st.store.apply_intent(player, intent).await {
                        Ok(_) => {
                            tracing::info!(%player, version = intent.version(), "resumed a ban or lift on every board")
                        }
                        Err(e) => {
                            tracing::warn!(%player, error = %e, "resuming a ban or lift on every board failed; will retry")
                        }
                    }
                }
                seen = Some(now);
            }
            Err(e) => tracing::warn!(error = %e, "reading pending ban intents failed; will retry"),
        }
        tokio::select! {
            _ = tokio::time::sleep(RESUME_EVERY) => {}
            _ = stop.changed() => return,
        }
    }
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
