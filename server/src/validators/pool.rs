//! A fixed set of threads that run verifications, fed by a bounded queue: a verification never
//! runs on an actix or tokio worker, so a validator burning its fuel slows no socket or HTTP
//! request, and a flood of verifications is refused (`busy`) instead of queueing without end.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Stack of each verification thread: well above the wasm stack limit
/// ([`super::Limits::max_wasm_stack`]), which the engine enforces on this same stack.
const THREAD_STACK: usize = 8 << 20;

/// The queue was full.
#[derive(Debug)]
pub struct Full;

/// The verification threads and their queue; threads end when the pool is dropped and the
/// queue drains.
pub struct Pool {
    tx: SyncSender<Job>,
}

impl Pool {
    /// Starts `threads` threads (at least one) behind a queue of `queue` waiting jobs.
    pub fn new(threads: usize, queue: usize) -> std::io::Result<Pool> {
        let (tx, rx) = sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("validator-{i}"))
                .stack_size(THREAD_STACK)
                .spawn(move || worker(&rx))?;
        }
        Ok(Pool { tx })
    }

    /// Queues `job`, or says the queue is full.
    pub fn try_run(&self, job: impl FnOnce() + Send + 'static) -> Result<(), Full> {
        match self.tx.try_send(Box::new(job)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(Full),
        }
    }
}

fn worker(rx: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job, never while running one.
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}
