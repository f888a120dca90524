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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
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
    /// The session's submissions awaiting their answer ([`Outbox::submitting`]).
    submitting: AtomicU32,
}

/// A submission of the session awaiting its answer; dropped once it has it (or was dropped).
pub struct Submitting(Arc<Outbox>);

impl Drop for Submitting {
    fn drop(&mut self) {
        self.0.submitting.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Inner {
    /// A WebSocket ping is due; sent before anything else and never counted.
    ping: bool,
    direct: VecDeque<Message>,
    /// One slot per view the hub offered an update for (until the view is dropped), so that
    /// offering an update allocates nothing but its message. A session holds a few views: a
    /// linear search is the cheapest lookup.
    slots: Vec<ViewSlot>,
    /// Slots holding an update.
    pending: usize,
    /// Stamps the order in which slots became pending: the oldest is sent first.
    turn: u64,
    /// Since when the queue has held `capacity` messages or more.
    full_since: Option<Instant>,
}

struct ViewSlot {
    key: ViewKey,
    text: Option<ByteString>,
    turn: u64,
    /// Since when `text` has waited (set when the slot became pending, kept by replacements).
    since: Instant,
}

impl Inner {
    /// The slot of a view, if it has one.
    fn slot(&mut self, board: &Id, kind: ViewKind) -> Option<&mut ViewSlot> {
        self.slots
            .iter_mut()
            .find(|s| s.key.1 == kind && s.key.0 == *board)
    }

    fn len(&self) -> usize {
        self.direct.len() + self.pending
    }

    /// The oldest pending view update.
    fn pop_view(&mut self) -> Option<ByteString> {
        if self.pending == 0 {
            return None;
        }
        let slot = self
            .slots
            .iter_mut()
            .filter(|s| s.text.is_some())
            .min_by_key(|s| s.turn)?;
        self.pending -= 1;
        slot.text.take()
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
            submitting: AtomicU32::new(0),
        }
    }

    /// Counts a submission of the session until its answer is queued (the guard is dropped):
    /// meanwhile the hub holds the player's `me` update back for a while, to send it with the
    /// ack (`hub/commit.rs`).
    pub fn submitting(self: &Arc<Self>) -> Submitting {
        self.submitting.fetch_add(1, Ordering::Relaxed);
        Submitting(self.clone())
    }

    /// Whether a submission of the session awaits its answer.
    pub fn awaits_ack(&self) -> bool {
        self.submitting.load(Ordering::Relaxed) > 0
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
    pub fn offer_view(&self, board: &Id, kind: ViewKind, text: ByteString) {
        self.put_view(board, kind, text);
        self.notify.notify_one();
    }

    /// [`Outbox::offer_view`] without waking the session: the caller calls [`Outbox::wake`]
    /// later (a batch's `me` updates are queued before its acks, woken after them).
    pub fn put_view(&self, board: &Id, kind: ViewKind, text: ByteString) {
        let mut guard = self.lock();
        let g = &mut *guard;
        let turn = g.turn;
        match g.slot(board, kind) {
            Some(slot) => match slot.text.replace(text) {
                Some(_) => crate::metrics::COALESCED.inc(),
                None => {
                    slot.turn = turn;
                    slot.since = Instant::now();
                    g.turn += 1;
                    g.pending += 1;
                }
            },
            None => {
                g.slots.push(ViewSlot {
                    key: (board.clone(), kind),
                    text: Some(text),
                    turn,
                    since: Instant::now(),
                });
                g.turn += 1;
                g.pending += 1;
            }
        }
        g.update_full(self.capacity);
    }

    /// Wakes the session to write what was put in its queue.
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Since when the view's unsent update has waited (`None`: the session wrote the last one).
    pub fn view_pending_since(&self, board: &Id, kind: ViewKind) -> Option<Instant> {
        self.lock()
            .slot(board, kind)
            .filter(|s| s.text.is_some())
            .map(|s| s.since)
    }

    /// Forgets an unsent update of a view that was unsubscribed.
    pub fn drop_view(&self, key: &ViewKey) {
        let mut g = self.lock();
        if let Some(i) = g.slots.iter().position(|s| s.key == *key) {
            if g.slots.swap_remove(i).text.is_some() {
                g.pending -= 1;
            }
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
        // Slots without a pending update hold only their view's key (kept to spare a clone per
        // update): an idle session gives them back too.
        if g.pending == 0 {
            g.slots = Vec::new();
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
            g.pop_view().map(Message::Text)
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
        o.offer_view(&top.0, top.1, "1".into());
        o.offer_view(&top.0, top.1, "2".into());
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
        o.offer_view(&key("b", ViewKind::Me).0, ViewKind::Me, "m".into());
        assert!(o.full_since().is_some());
        assert!(!o.offer(Message::Text("n".into())));
        // Views are still accepted: the queue keeps the latest state of every view.
        o.offer_view(&key("b", ViewKind::Top).0, ViewKind::Top, "t".into());
        o.pop();
        o.pop();
        assert!(o.full_since().is_none());
        assert_eq!(text(o.pop()), "t");
    }

    #[test]
    fn trim_frees_only_empty_queues() {
        let o = Outbox::new(4);
        o.push(Message::Text("a".into()));
        o.offer_view(&key("b", ViewKind::Top).0, ViewKind::Top, "t".into());
        o.trim();
        assert_eq!(text(o.pop()), "a", "a queued answer survives a trim");
        o.trim();
        assert_eq!(crate::sync::lock(&o.inner).direct.capacity(), 0);
        assert_eq!(text(o.pop()), "t", "a pending view survives a trim");
        o.trim();
        let g = crate::sync::lock(&o.inner);
        assert_eq!(g.slots.capacity(), 0);
    }

    #[test]
    fn dropped_views_are_not_sent() {
        let o = Outbox::new(4);
        let k = key("b", ViewKind::Around);
        o.offer_view(&k.0, k.1, "x".into());
        o.drop_view(&k);
        assert!(o.is_empty());
        assert!(o.pop().is_none());
    }

    /// Pending views go out oldest first, a replaced one keeps its turn, and a sent slot
    /// takes a new turn when it is offered again.
    #[test]
    fn view_updates_go_out_in_the_order_they_became_pending() {
        let o = Outbox::new(8);
        let (a, b) = (key("a", ViewKind::Me), key("b", ViewKind::Me));
        o.offer_view(&a.0, a.1, "a1".into());
        o.offer_view(&b.0, b.1, "b1".into());
        o.offer_view(&a.0, a.1, "a2".into());
        assert_eq!(text(o.pop()), "a2");
        o.offer_view(&a.0, a.1, "a3".into());
        assert_eq!(text(o.pop()), "b1");
        assert_eq!(text(o.pop()), "a3");
        assert!(o.pop().is_none() && o.is_empty());
    }

    /// A view's unsent update tells since when it has waited: since the slot became pending (a
    /// replacement does not restart it), and nothing once it was written.
    #[test]
    fn a_pending_view_tells_since_when_it_waits() {
        let o = Outbox::new(8);
        let (me, top) = (key("b", ViewKind::Me), key("b", ViewKind::Top));
        assert_eq!(o.view_pending_since(&me.0, me.1), None);
        let before = Instant::now();
        o.offer_view(&me.0, me.1, "1".into());
        let since = o.view_pending_since(&me.0, me.1).expect("pending");
        assert!(since >= before);
        o.offer_view(&me.0, me.1, "2".into());
        assert_eq!(
            o.view_pending_since(&me.0, me.1),
            Some(since),
            "a replacement keeps it"
        );
        assert_eq!(
            o.view_pending_since(&top.0, top.1),
            None,
            "another view of the board"
        );
        assert_eq!(text(o.pop()), "2");
        assert_eq!(o.view_pending_since(&me.0, me.1), None, "written");
        o.offer_view(&me.0, me.1, "3".into());
        assert!(o.view_pending_since(&me.0, me.1).expect("pending again") >= since);
    }
}
