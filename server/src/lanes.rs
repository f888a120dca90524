//! Group commit: one task per key (a board, a queue) with work in flight takes everything sent
//! to that key while its previous Redis call was running, and applies it in the next call.
//! Under load that is one round trip and one script run for many callers, each given its own
//! result; with no load a batch is one item and costs nothing extra.
//!
//! A key's task (its *lane*) retires after a quiet spell, so keys nobody writes to hold no task
//! and no map entry; the next send starts a fresh lane.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scorecast_shared::Id;
use tokio::sync::mpsc;

/// The running lanes, by key: cheap to clone.
pub struct Lanes<T> {
    map: Arc<Mutex<HashMap<Id, mpsc::UnboundedSender<T>>>>,
    idle: Duration,
}

impl<T> Clone for Lanes<T> {
    fn clone(&self) -> Self {
        Lanes {
            map: self.map.clone(),
            idle: self.idle,
        }
    }
}

impl<T: Send + 'static> Lanes<T> {
    /// Lanes that retire after `idle` without work.
    pub fn new(idle: Duration) -> Lanes<T> {
        Lanes {
            map: Arc::default(),
            idle,
        }
    }

    /// The same lanes' map, with another idle time (tests shorten it).
    pub fn with_idle(mut self, idle: Duration) -> Lanes<T> {
        self.idle = idle;
        self
    }

    /// Keys with a running lane.
    pub fn running(&self) -> usize {
        crate::sync::lock(&self.map).len()
    }

    /// Hands `item` to `key`'s lane, spawning `run(lane)` first when none runs. `Err` gives the
    /// item back only if lanes keep retiring under it (twice), which a caller reports as
    /// unavailable.
    pub fn send<F>(&self, key: &Id, item: T, run: impl Fn(Lane<T>) -> F) -> Result<(), T>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut item = item;
        // A lane that has just retired refuses the send: the second try starts a fresh one.
        for _ in 0..2 {
            let tx = {
                let mut map = crate::sync::lock(&self.map);
                match map.get(key).filter(|tx| !tx.is_closed()) {
                    Some(tx) => tx.clone(),
                    None => {
                        let (tx, rx) = mpsc::unbounded_channel();
                        tokio::spawn(run(Lane {
                            key: key.clone(),
                            rx,
                            map: self.map.clone(),
                            idle: self.idle,
                            retiring: false,
                            carry: None,
                        }));
                        map.insert(key.clone(), tx.clone());
                        tx
                    }
                }
            };
            match tx.send(item) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::SendError(back)) => item = back,
            }
        }
        Err(item)
    }
}

/// One key's lane, owned by its task.
pub struct Lane<T> {
    key: Id,
    rx: mpsc::UnboundedReceiver<T>,
    map: Arc<Mutex<HashMap<Id, mpsc::UnboundedSender<T>>>>,
    idle: Duration,
    retiring: bool,
    /// An item taken from the channel that did not fit the previous batch: the next one's first.
    carry: Option<T>,
}

impl<T> Lane<T> {
    pub fn key(&self) -> &Id {
        &self.key
    }

    /// Fills `batch` (left empty by the caller) with the next batch: waits for a first item,
    /// then takes whatever else is already waiting while `fits(batch, next)` says it belongs
    /// in the same call. Returns `false` once the lane is done: every sender gone, or idle for
    /// its idle time (it then closes, and what was sent before the close still comes out).
    pub async fn next(
        &mut self,
        batch: &mut Vec<T>,
        mut fits: impl FnMut(&[T], &T) -> bool,
    ) -> bool {
        let first = match self.carry.take() {
            Some(item) => item,
            None => match self.first().await {
                Some(item) => item,
                None => return false,
            },
        };
        batch.push(first);
        while let Ok(item) = self.rx.try_recv() {
            if !fits(batch, &item) {
                self.carry = Some(item);
                break;
            }
            batch.push(item);
        }
        true
    }

    async fn first(&mut self) -> Option<T> {
        loop {
            if self.retiring {
                // Closed: hand out what was sent before the close, then stop.
                return self.rx.try_recv().ok();
            }
            match tokio::time::timeout(self.idle, self.rx.recv()).await {
                Ok(item) => return item,
                Err(_) => {
                    // Idle: close, and leave the map unless a fresh lane already took the key.
                    let mut map = crate::sync::lock(&self.map);
                    self.rx.close();
                    if map.get(&self.key).is_some_and(|tx| tx.is_closed()) {
                        map.remove(&self.key);
                    }
                    self.retiring = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    type Item = (u32, oneshot::Sender<usize>);

    /// A lane whose calls take 20 ms: what arrives meanwhile goes in the next call, at most
    /// three at a time; each item learns the size of the batch it went in.
    async fn run(mut lane: Lane<Item>) {
        let mut batch = Vec::new();
        while lane.next(&mut batch, |b, _| b.len() < 3).await {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let n = batch.len();
            for (_, tx) in batch.drain(..) {
                let _ = tx.send(n);
            }
        }
    }

    #[tokio::test]
    async fn items_sent_during_a_call_share_the_next_within_the_bound() {
        let lanes = Lanes::new(Duration::from_secs(30));
        let key = Id::parse("k").unwrap();
        let mut answers = Vec::new();
        for i in 0..7 {
            let (tx, rx) = oneshot::channel();
            assert!(lanes.send(&key, (i, tx), run).is_ok());
            answers.push(rx);
        }
        let mut sizes = Vec::new();
        for rx in answers {
            sizes.push(rx.await.unwrap());
        }
        // All seven were waiting before the lane's first call: 3, 3, then the last one.
        assert_eq!(sizes, [3, 3, 3, 3, 3, 3, 1]);
        assert_eq!(lanes.running(), 1);
    }

    #[tokio::test]
    async fn an_idle_lane_retires_and_the_next_send_starts_a_fresh_one() {
        let lanes = Lanes::new(Duration::from_millis(30));
        let key = Id::parse("k").unwrap();
        let (tx, rx) = oneshot::channel();
        lanes.send(&key, (1, tx), run).unwrap();
        assert_eq!(rx.await.unwrap(), 1);
        // Retirement is the lane's own timeout: wait for the map to empty.
        tokio::time::timeout(Duration::from_secs(5), async {
            while lanes.running() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the idle lane retired");
        let (tx, rx) = oneshot::channel();
        lanes.send(&key, (2, tx), run).unwrap();
        assert_eq!(rx.await.unwrap(), 1);
        assert_eq!(lanes.running(), 1);
    }
}
