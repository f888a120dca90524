//! The queue gauges of `/metrics`, cached: reading them costs Redis about 7 commands per queue
//! (a depth per state and the lag), so they are read at most once per
//! `metrics.queue_refresh_ms`, by one background read a scrape starts, and a scrape itself costs
//! Redis nothing whatever the number of queues.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Queues;

/// The cache of the queue gauges: when they were last read, and whether a read is under way.
pub struct QueueGauges {
    every: Duration,
    last: Mutex<Option<Instant>>,
    busy: AtomicBool,
}

impl QueueGauges {
    pub fn new(every: Duration) -> QueueGauges {
        QueueGauges {
            every,
            last: Mutex::new(None),
            busy: AtomicBool::new(false),
        }
    }

    /// For a scrape: when the gauges are older than the refresh interval and nobody is reading
    /// them, starts one read of every queue (in its own task, so a scrape that goes away does not
    /// abandon it). Only the very first scrape waits for it (so it shows the queues); the others
    /// show the cached values at once. With Redis away the gauges keep their last values.
    pub async fn refresh(self: &Arc<Self>, queues: &Queues) {
        let last = *crate::sync::lock(&self.last);
        if last.is_some_and(|t| t.elapsed() < self.every) || self.busy.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let (me, queues) = (self.clone(), queues.clone());
        let read = tokio::spawn(async move {
            read_queues(&queues).await;
            *crate::sync::lock(&me.last) = Some(Instant::now());
            me.busy.store(false, Ordering::Release);
        });
        if last.is_none() {
            let _ = read.await;
        }
    }
}

/// Reads every queue's depths and lag into the gauges.
async fn read_queues(queues: &Queues) {
    let Ok(names) = queues.names().await else {
        return;
    };
    let now = queues.clock().now_ms();
    for name in names {
        let q = queues.get(&name);
        if let (Ok(c), Ok(lag)) = (q.counts().await, q.lag_ms(now).await) {
            crate::metrics::set_queue(
                name.as_str(),
                [
                    ("ready", c.ready),
                    ("delayed", c.delayed),
                    ("processing", c.processing),
                    ("dead", c.dead),
                ],
                lag,
            );
        }
    }
}
