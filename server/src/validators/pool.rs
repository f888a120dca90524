//! A fixed set of threads that run verifications, fed by a bounded queue: a verification never
//! runs on an actix or tokio worker, and a flood of verifications is refused (`busy`) instead of
//! queueing without end. The threads run at a lower scheduling priority than the rest of the
//! server (`nice`, 10 by default): on a machine with as many cores as verification threads, a validator
//! burning its fuel would otherwise take half of every core from the socket and HTTP workers;
//! lowered, it gets what they leave, and other players' acks keep their latency.

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
    /// Starts `threads` threads (at least one) behind a queue of `queue` waiting jobs, each
    /// raising its nice value by `nice` over the process's (capped at 19, the lowest priority):
    /// at +10 the kernel gives a verification about a tenth of a socket worker's share when
    /// both want the same core; 0 leaves them at the server's priority.
    pub fn new(threads: usize, nice: i32, queue: usize) -> std::io::Result<Pool> {
        let (tx, rx) = sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("validator-{i}"))
                .stack_size(THREAD_STACK)
                .spawn(move || {
                    lower_priority(nice);
                    worker(&rx)
                })?;
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

/// Raises this thread's nice value by `nice` (Linux keeps one per thread; elsewhere this does
/// nothing). A failure leaves the thread at the process's priority.
fn lower_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: gettid, getpriority and setpriority only read and set this thread's scheduling
    // priority; no memory is shared with the kernel.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + nice).min(19));
    }
}
