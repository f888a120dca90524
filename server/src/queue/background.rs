//! The promoter (due delayed jobs → ready) and the reaper (lapsed leases → ready or dead
//! letters), as tokio tasks.
//!
//! Neither polls blindly: each step returns the next due time (or lease deadline) over all
//! queues, and the task sleeps until then, or until a [`Wakeup`] says that something earlier
//! was scheduled (an enqueue with an earlier `run_at`, a claim with an earlier deadline). A
//! ceiling on the sleep covers work scheduled through another instance that died before its
//! own promoter got to it. With a manual test clock the steps are library calls
//! ([`Queue::promote_due`](super::Queue::promote_due), [`Queue::reap`](super::Queue::reap)), so
//! tests never sleep to synchronise.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use super::{Queue, Queues, Sweep};
use crate::error::AppResult;

/// The longest the promoter or the reaper sleeps without being woken.
const MAX_IDLE: Duration = Duration::from_secs(30);
/// Pause after a failed step (Redis unreachable), before trying again.
const ERROR_PAUSE: Duration = Duration::from_secs(1);

/// Wakes a sleeping background task when work falls due before the time it planned to wake.
pub(crate) struct Wakeup {
    notify: Notify,
    /// When the task plans to wake (queue-clock ms); `i64::MIN` while it is running a step, so
    /// that anything scheduled meanwhile leaves a wake-up permit and is never missed.
    planned: AtomicI64,
}

impl Default for Wakeup {
    fn default() -> Self {
        Wakeup {
            notify: Notify::new(),
            planned: AtomicI64::new(i64::MIN),
        }
    }
}

impl Wakeup {
    pub(crate) fn wake_if_earlier(&self, at_ms: i64) {
        let planned = self.planned.load(Ordering::SeqCst);
        if planned == i64::MIN || at_ms < planned {
            // notify_one keeps a permit when nobody waits yet, so a wake-up between the step
            // and the sleep is not lost.
            self.notify.notify_one();
        }
    }
}

/// The background tasks of one server; dropping it (or [`Background::stop`]) stops them.
pub struct Background {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Background {
    /// An empty set of tasks and the stop signal to give to each.
    pub fn new() -> (Background, watch::Receiver<bool>) {
        let (stop, rx) = watch::channel(false);
        (
            Background {
                stop,
                tasks: Vec::new(),
            },
            rx,
        )
    }

    pub fn push(&mut self, task: JoinHandle<()>) {
        self.tasks.push(task);
    }

    /// Signals every task to stop and waits for them.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

#[derive(Clone, Copy)]
enum Step {
    Promote,
    Reap,
}

/// Starts the promoter and the reaper on `bg`.
pub fn spawn_maintenance(queues: &Queues, bg: &mut Background, stop: &watch::Receiver<bool>) {
    for step in [Step::Promote, Step::Reap] {
        let (q, stop) = (queues.clone(), stop.clone());
        bg.push(tokio::spawn(run(q, step, stop)));
    }
}

async fn run(queues: Queues, step: Step, mut stop: watch::Receiver<bool>) {
    let name = match step {
        Step::Promote => "promoter",
        Step::Reap => "reaper",
    };
    loop {
        let wakeup = match step {
            Step::Promote => &queues.inner.promoter,
            Step::Reap => &queues.inner.reaper,
        };
        wakeup.planned.store(i64::MIN, Ordering::SeqCst);
        let sleep = match sweep_all(&queues, step).await {
            Ok(Some((next, now))) => {
                let ms = (next - now).clamp(0, MAX_IDLE.as_millis() as i64);
                wakeup.planned.store(now + ms, Ordering::SeqCst);
                Duration::from_millis(ms as u64)
            }
            Ok(None) => {
                wakeup.planned.store(i64::MAX, Ordering::SeqCst);
                MAX_IDLE
            }
            Err(e) => {
                tracing::warn!(task = name, error = %e, "queue maintenance step failed");
                ERROR_PAUSE
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = wakeup.notify.notified() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// Runs `step` over every queue until each is below its batch bound. Returns the earliest
/// next due time over all queues with the clock it was read at. A queue whose step fails (its
/// Redis, or on a cluster its shard, is down) does not hold up the others: they are swept, then
/// the first error is returned so the whole sweep is retried after a pause.
async fn sweep_all(queues: &Queues, step: Step) -> AppResult<Option<(i64, i64)>> {
    let batch = u64::from(queues.settings().promote_batch.max(1));
    let mut earliest: Option<(i64, i64)> = None;
    let mut failed = None;
    for name in queues.names().await? {
        let q = queues.get(&name);
        let s = loop {
            let s = match one(&q, step).await {
                Ok(s) => s,
                Err(e) => break Err(e),
            };
            if s.moved + s.dead < batch {
                break Ok(s);
            }
            // A full batch: more may be due. Let other tasks run between batches.
            tokio::task::yield_now().await;
        };
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                failed.get_or_insert(e);
                continue;
            }
        };
        if let Some(next) = s.next_ms {
            if earliest.is_none_or(|(e, _)| next < e) {
                earliest = Some((next, s.now_ms));
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(earliest),
    }
}

async fn one(q: &Queue, step: Step) -> AppResult<Sweep> {
    match step {
        Step::Promote => q.promote_due().await,
        Step::Reap => q.reap().await,
    }
}
