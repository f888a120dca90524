//! The one policy for std mutexes: a poisoned lock is recovered, never unwrapped.
//!
//! Every std `Mutex` in the server guards plain maps or queues updated without an `.await`; a
//! panic elsewhere leaves them usable, and refusing every later caller would turn one panic
//! into an outage.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data back from a poisoned lock.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_recovered() {
        let m = std::sync::Arc::new(Mutex::new(1));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}
