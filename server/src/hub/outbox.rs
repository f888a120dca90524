//! A session's bounded outbound queue (`docs/protocol.md`, "Slow clients": a slow reader
//! never slows the others).
//!
//! The hub and the session's own handlers put messages here without ever awaiting a socket; the
//! session's select loop takes them out only when the socket can accept one. Two kinds of entry:
//!
//! - *direct* messages (welcome, ack, rejected, error, pong, notify) are answers that must not be
//!   lost: a FIFO;
//! - *view updates* have one slot per (board, view): a newer update replaces a stale one that
//!   was not sent yet, so a view can never pile up more than one message.
//!
//! The queue is "full" when it holds `capacity` messages or more. The session stops reading
//! client frames while it is full (so its own answers cannot grow it), the hub refuses `notify`
//! messages, and a queue that stays full longer than `slow_client_ms` gets the session closed
//! with 1008. View slots are always accepted (they are bounded by the views a session may hold),
//! so a full queue still ends up holding the latest state of every view.
//!
//! The lock is a std `Mutex`: it is held for a few pointer moves and never across an `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use actix_ws::Message;
use bytestring::ByteString;
use scorecast_shared::protocol::ViewKind;
use scorecast_shared::Id;
use tokio::sync::Notify;

/// Which view slot an update belongs to: a session has at most one view per (board, kind).
pub type ViewKey = (Id, ViewKind);

pub struct Outbox {
    inner: Mutex<Inner>,
    /// Wakes the session when something was queued.
    notify: Notify,
    capacity: usize,
}

#[derive(Default)]
struct Inner {
    /// A WebSocket ping is due; sent before anything else and never counted.
    ping: bool,
    direct: VecDeque<Message>,
    /// Pending view updates and the order in which their slots became pending.
    slots: HashMap<ViewKey, ByteString>,
    order: VecDeque<ViewKey>,
    /// Since when the queue has held `capacity` messages or more.
    full_since: Option<Instant>,
}

impl Inner {
    fn len(&self) -> usize {
        self.direct.len() + self.slots.len()
    }

    fn update_full(&mut self, capacity: usize) {
        if self.len() >= capacity {
            self.full_since.get_or_insert_with(Instant::now);
        } else {
            self.full_since = None;
        }
    }
}

impl Outbox {
    pub fn new(capacity: usize) -> Outbox {
        Outbox {
            inner: Mutex::new(Inner::default()),
            notify: Notify::new(),
            // A zero capacity would make every session "full" from the start.
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// Queues an answer the session itself produced (it stops reading while the queue is full,
    /// so these are bounded by `capacity` plus the submissions in flight).
    pub fn push(&self, msg: Message) {
        let mut g = self.lock();
        g.direct.push_back(msg);
        g.update_full(self.capacity);
        drop(g);
        self.notify.notify_one();
    }

    /// Queues a message from outside the session (e.g. `notify`); refused while full.
    pub fn offer(&self, msg: Message) -> bool {
        let mut g = self.lock();
        if g.len() >= self.capacity {
            return false;
        }
        g.direct.push_back(msg);
        g.update_full(self.capacity);
        drop(g);
        self.notify.notify_one();
        true
    }

    /// Puts the latest state of a view in its slot, replacing an unsent stale one.
    pub fn offer_view(&self, key: &ViewKey, text: ByteString) {
        let mut g = self.lock();
        if g.slots.insert(key.clone(), text).is_none() {
            g.order.push_back(key.clone());
        } else {
            crate::metrics::COALESCED.inc();
        }
        g.update_full(self.capacity);
        drop(g);
        self.notify.notify_one();
    }

    /// Forgets an unsent update of a view that was unsubscribed.
    pub fn drop_view(&self, key: &ViewKey) {
        let mut g = self.lock();
        if g.slots.remove(key).is_some() {
            g.order.retain(|k| k != key);
        }
        g.update_full(self.capacity);
    }

    /// Gives back the queues' memory once they are empty (after a burst, a queue keeps the
    /// capacity it grew to); the session calls this on its heartbeat, not per message.
    pub fn trim(&self) {
        let mut g = self.lock();
        if g.direct.is_empty() {
            g.direct = VecDeque::new();
        }
        if g.slots.is_empty() {
            g.slots = HashMap::new();
            g.order = VecDeque::new();
        }
    }

    pub fn ping(&self) {
        self.lock().ping = true;
        self.notify.notify_one();
    }

    /// The next message to write: a due ping, then answers, then view updates.
    pub fn pop(&self) -> Option<Message> {
        let mut g = self.lock();
        let msg = if std::mem::take(&mut g.ping) {
            Some(Message::Ping(Default::default()))
        } else if let Some(m) = g.direct.pop_front() {
            Some(m)
        } else {
            loop {
                let Some(key) = g.order.pop_front() else {
                    break None;
                };
                if let Some(text) = g.slots.remove(&key) {
                    break Some(Message::Text(text));
                }
            }
        };
        g.update_full(self.capacity);
        msg
    }

    pub fn is_empty(&self) -> bool {
        let g = self.lock();
        !g.ping && g.len() == 0
    }

    /// Whether the queue holds `capacity` messages or more.
    pub fn is_full(&self) -> bool {
        self.lock().len() >= self.capacity
    }

    pub fn full_since(&self) -> Option<Instant> {
        self.lock().full_since
    }

    /// Resolves once something was queued since the last call (a permit is kept if nobody
    /// was waiting, so a wake-up is never lost).
    pub async fn notified(&self) {
        self.notify.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: &str, k: ViewKind) -> ViewKey {
        // unwrap: constant, valid ids.
        (Id::parse(b).unwrap(), k)
    }

    fn text(m: Option<Message>) -> String {
        match m {
            Some(Message::Text(t)) => t.to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_view_update_replaces_the_stale_one() {
        let o = Outbox::new(4);
        let top = key("b", ViewKind::Top);
        o.offer_view(&top, "1".into());
        o.offer_view(&top, "2".into());
        o.push(Message::Text("ack".into()));
        assert_eq!(text(o.pop()), "ack", "answers go first");
        assert_eq!(text(o.pop()), "2", "only the latest view state is sent");
        assert!(o.pop().is_none());
    }

    #[test]
    fn full_is_tracked_and_notify_offers_are_refused_while_full() {
        let o = Outbox::new(2);
        o.push(Message::Text("a".into()));
        assert!(o.full_since().is_none());
        o.offer_view(&key("b", ViewKind::Me), "m".into());
        assert!(o.full_since().is_some());
        assert!(!o.offer(Message::Text("n".into())));
        // Views are still accepted: the queue keeps the latest state of every view.
        o.offer_view(&key("b", ViewKind::Top), "t".into());
        o.pop();
        o.pop();
        assert!(o.full_since().is_none());
        assert_eq!(text(o.pop()), "t");
    }

    #[test]
    fn trim_frees_only_empty_queues() {
        let o = Outbox::new(4);
        o.push(Message::Text("a".into()));
        o.offer_view(&key("b", ViewKind::Top), "t".into());
        o.trim();
        assert_eq!(text(o.pop()), "a", "a queued answer survives a trim");
        o.trim();
        assert_eq!(crate::sync::lock(&o.inner).direct.capacity(), 0);
        assert_eq!(text(o.pop()), "t", "a pending view survives a trim");
        o.trim();
        let g = crate::sync::lock(&o.inner);
        assert_eq!(g.slots.capacity() + g.order.capacity(), 0);
    }

    #[test]
    fn dropped_views_are_not_sent() {
        let o = Outbox::new(4);
        let k = key("b", ViewKind::Around);
        o.offer_view(&k, "x".into());
        o.drop_view(&k);
        assert!(o.is_empty());
        assert!(o.pop().is_none());
    }
}
