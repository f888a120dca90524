//! A session's bounded outbound queue (`docs/protocol.md`, "Slow clients": a slow reader
//! never slows the others), and what the connection's writer pulls from.
//!
//! The hub and the session's handlers put messages here without ever awaiting a socket. The
//! connection's writer (`writer.rs`, the body actix writes to the socket) takes everything
//! queued in one pass, whenever the socket has room: a message put here wakes the writer, not
//! the session, so a push crosses no task but the one that writes it. Two kinds of entry:
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
//! The session is woken only for what it must act on: the queue becoming full or not full,
//! messages starting to wait for a writer that does not take them (a stalled socket), and the
//! writer being gone (the connection ended).
//!
//! The lock is a std `Mutex`: it is held for a few pointer moves and never across an `.await`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Instant;

use actix_ws::{CloseReason, Message};
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

/// What the writer gets from one [`Outbox::take`].
#[derive(Debug, PartialEq)]
pub enum Take {
    /// Messages were handed over (the last of them may be the close frame): write them, then
    /// take again.
    Batch,
    /// Nothing is queued: the writer is woken when something is.
    Wait,
    /// The close frame was taken already, or the output ended without one: the writer is done.
    Done,
}

/// What the session's loop looks at on each pass, read under one lock.
#[derive(Clone, Copy, Debug)]
pub struct Status {
    /// The writer is gone: the connection ended.
    pub gone: bool,
    /// Nothing is queued (no ping either).
    pub empty: bool,
    /// Since when the queue has held `capacity` messages or more.
    pub full_since: Option<Instant>,
    /// Since when queued messages have waited with the writer taking nothing (its socket was
    /// full, or its connection was busy).
    pub waiting_since: Option<Instant>,
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
    /// The writer's waker while it waits for messages; taken when it is woken, so a writer
    /// that was woken and has not taken its messages yet (busy, or its socket is full) has none.
    writer: Option<Waker>,
    /// Since when messages have waited while the writer took nothing.
    waiting_since: Option<Instant>,
    /// The writer has taken at least once: before that, actix has not sent the upgrade
    /// response yet, and the welcome waiting for it is no sign of a slow client.
    started: bool,
    /// The close frame the writer sends after the direct messages (views are dropped).
    close: Option<Option<CloseReason>>,
    /// The writer took the close frame.
    closed: bool,
    /// The writer is gone: the connection ended.
    gone: bool,
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

    /// Puts `text` in the view's slot (made on its first update), replacing an unsent one.
    fn put_view(&mut self, board: &Id, kind: ViewKind, text: ByteString) {
        let turn = self.turn;
        match self.slot(board, kind) {
            Some(slot) => match slot.text.replace(text) {
                Some(_) => crate::metrics::COALESCED.inc(),
                None => {
                    slot.turn = turn;
                    slot.since = Instant::now();
                    self.turn += 1;
                    self.pending += 1;
                }
            },
            None => {
                self.slots.push(ViewSlot {
                    key: (board.clone(), kind),
                    text: Some(text),
                    turn,
                    since: Instant::now(),
                });
                self.turn += 1;
                self.pending += 1;
            }
        }
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

    /// Tracks whether the queue is full; returns whether that changed (the session acts on it).
    fn update_full(&mut self, capacity: usize) -> bool {
        let full = self.len() >= capacity;
        if full == self.full_since.is_some() {
            return false;
        }
        self.full_since = full.then(Instant::now);
        true
    }

    /// After something was queued: the writer to wake, or whether the session must be told
    /// that messages started to wait for a writer that was woken already and has taken nothing.
    fn queued(&mut self) -> Wake {
        if let Some(w) = self.writer.take() {
            return Wake::Writer(w);
        }
        if self.started
            && self.waiting_since.is_none()
            && (self.len() > 0 || self.ping)
            && !self.gone
        {
            self.waiting_since = Some(Instant::now());
            return Wake::Session;
        }
        Wake::Nobody
    }
}

/// Who to wake once the lock is released.
enum Wake {
    Writer(Waker),
    Session,
    Nobody,
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

    /// Ends a change made under the lock: wakes whoever it concerns, after the lock is released.
    fn changed(&self, mut g: std::sync::MutexGuard<'_, Inner>, wake_writer: bool) {
        let full_changed = g.update_full(self.capacity);
        let wake = if wake_writer {
            g.queued()
        } else {
            Wake::Nobody
        };
        drop(g);
        match wake {
            Wake::Writer(w) => w.wake(),
            Wake::Session => self.notify.notify_one(),
            Wake::Nobody => {}
        }
        if full_changed {
            self.notify.notify_one();
        }
    }

    /// Queues an answer the session itself produced (it stops reading while the queue is full,
    /// so these are bounded by `capacity` plus the submissions in flight).
    pub fn push(&self, msg: Message) {
        let mut g = self.lock();
        g.direct.push_back(msg);
        self.changed(g, true);
    }

    /// Queues a message from outside the session (e.g. `notify`); refused while full.
    pub fn offer(&self, msg: Message) -> bool {
        let mut g = self.lock();
        if g.len() >= self.capacity {
            return false;
        }
        g.direct.push_back(msg);
        self.changed(g, true);
        true
    }

    /// Puts the latest state of a view in its slot, replacing an unsent stale one.
    pub fn offer_view(&self, board: &Id, kind: ViewKind, text: ByteString) {
        let mut g = self.lock();
        g.put_view(board, kind, text);
        self.changed(g, true);
    }

    /// [`Outbox::offer_view`] without waking the writer, and only if the view's last update was
    /// taken (a session still holding one is behind: the flush sees to it). Returns whether
    /// `text` was put; if so the caller calls [`Outbox::wake_unless_answering`] later (a batch's
    /// `me` updates are queued before its acks are handed out). One lock for both.
    pub fn put_view(&self, board: &Id, kind: ViewKind, text: &ByteString) -> bool {
        let mut g = self.lock();
        if g.slot(board, kind).is_some_and(|s| s.text.is_some()) {
            return false;
        }
        g.put_view(board, kind, text.clone());
        self.changed(g, false);
        true
    }

    /// Wakes the writer for what was put in the queue, unless a submission of the session
    /// awaits its answer: queuing that answer wakes the writer, which then takes both in one
    /// write (waking it now would send the update alone, a write before the answer's).
    pub fn wake_unless_answering(&self) {
        if self.awaits_ack() {
            return;
        }
        let g = self.lock();
        self.changed(g, true);
    }

    /// Since when the view's unsent update has waited (`None`: the writer took the last one).
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
        self.changed(g, false);
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

    /// A WebSocket ping is due: sent before anything else, never counted.
    pub fn ping(&self) {
        let mut g = self.lock();
        g.ping = true;
        self.changed(g, true);
    }

    /// Ends the connection's output: the writer sends the direct messages still queued, then
    /// the close frame, and nothing more (pending view updates are dropped).
    pub fn close(&self, reason: Option<CloseReason>) {
        let mut g = self.lock();
        g.close.get_or_insert(reason);
        Self::wake_writer(g);
    }

    /// Ends the connection's output after the close frame asked for, if any, or at once: the
    /// writer ends, and actix ends the connection.
    pub fn end(&self) {
        let mut g = self.lock();
        if g.close.is_none() {
            g.closed = true;
            Self::wake_writer(g);
        }
    }

    /// Wakes a waiting writer, after the lock is released.
    fn wake_writer(mut g: std::sync::MutexGuard<'_, Inner>) {
        let writer = g.writer.take();
        drop(g);
        if let Some(w) = writer {
            w.wake();
        }
    }

    /// For the writer: hands everything queued to `each`, in order (a due ping, then answers,
    /// then view updates oldest first; once closing, the answers and the close frame), or keeps
    /// `waker` to be woken when something is queued. `each` runs under the outbox's lock: it
    /// only encodes.
    pub fn take(&self, waker: &Waker, mut each: impl FnMut(Message)) -> Take {
        let mut g = self.lock();
        if g.closed {
            return Take::Done;
        }
        let mut taken = 0;
        if std::mem::take(&mut g.ping) && g.close.is_none() {
            each(Message::Ping(Default::default()));
            taken += 1;
        }
        taken += g.direct.len();
        g.direct.drain(..).for_each(&mut each);
        if !g.started {
            // The first take carries the welcome: an idle session keeps no queue grown by it.
            g.started = true;
            g.direct = VecDeque::new();
        }
        if let Some(reason) = g.close.take() {
            each(Message::Close(reason));
            taken += 1;
            g.closed = true;
            g.slots.clear();
            g.pending = 0;
        } else {
            while let Some(text) = g.pop_view() {
                each(Message::Text(text));
                taken += 1;
            }
        }
        g.waiting_since = None;
        let step = if taken == 0 {
            if !g.writer.as_ref().is_some_and(|w| w.will_wake(waker)) {
                g.writer = Some(waker.clone());
            }
            Take::Wait
        } else {
            Take::Batch
        };
        self.changed(g, false);
        step
    }

    /// The writer is gone (the connection ended): nothing queued will be written.
    pub fn writer_gone(&self) {
        let mut g = self.lock();
        g.gone = true;
        g.writer = None;
        drop(g);
        self.notify.notify_one();
    }

    /// What the session's loop looks at, in one lock.
    pub fn status(&self) -> Status {
        let g = self.lock();
        Status {
            gone: g.gone,
            empty: !g.ping && g.len() == 0,
            full_since: g.full_since,
            waiting_since: g.waiting_since,
        }
    }

    /// Resolves once the session has something to look at (the queue became full or not full,
    /// messages started to wait, the writer is gone) since the last call; a permit is kept if
    /// nobody was waiting, so a wake-up is never lost.
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

    /// A waker that counts its wake-ups.
    fn counting_waker() -> (Waker, Arc<AtomicU32>) {
        struct Count(Arc<AtomicU32>);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let count = Arc::new(AtomicU32::new(0));
        (Waker::from(Arc::new(Count(count.clone()))), count)
    }

    /// Whether the session was signalled since the last call (consumes the signal).
    fn session_signalled(o: &Outbox) -> bool {
        use std::future::Future;
        let signal = std::pin::pin!(o.notified());
        signal
            .poll(&mut std::task::Context::from_waker(Waker::noop()))
            .is_ready()
    }

    /// What the writer takes in one pass, and its messages.
    fn take_with(o: &Outbox, waker: &Waker) -> (Take, Vec<Message>) {
        let mut batch = Vec::new();
        let step = o.take(waker, |m| batch.push(m));
        (step, batch)
    }

    /// What the writer takes in one pass, as text (`ping`, `close`).
    fn take(o: &Outbox) -> Vec<String> {
        take_with(o, Waker::noop())
            .1
            .into_iter()
            .map(|m| match m {
                Message::Text(t) => t.to_string(),
                Message::Ping(_) => "ping".into(),
                Message::Close(_) => "close".into(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_view_update_replaces_the_stale_one() {
        let o = Outbox::new(4);
        let top = key("b", ViewKind::Top);
        o.offer_view(&top.0, top.1, "1".into());
        o.offer_view(&top.0, top.1, "2".into());
        o.push(Message::Text("ack".into()));
        o.ping();
        assert_eq!(
            take(&o),
            ["ping", "ack", "2"],
            "a ping, then answers, then only the latest view state"
        );
        assert!(take(&o).is_empty());
    }

    #[test]
    fn full_is_tracked_and_notify_offers_are_refused_while_full() {
        let o = Outbox::new(2);
        o.push(Message::Text("a".into()));
        assert!(o.status().full_since.is_none());
        o.offer_view(&key("b", ViewKind::Me).0, ViewKind::Me, "m".into());
        assert!(o.status().full_since.is_some());
        assert!(!o.offer(Message::Text("n".into())));
        // Views are still accepted: the queue keeps the latest state of every view.
        o.offer_view(&key("b", ViewKind::Top).0, ViewKind::Top, "t".into());
        assert_eq!(take(&o), ["a", "m", "t"]);
        assert!(o.status().full_since.is_none());
        assert!(o.offer(Message::Text("n".into())));
    }

    #[test]
    fn trim_frees_only_empty_queues() {
        let o = Outbox::new(4);
        o.push(Message::Text("a".into()));
        o.offer_view(&key("b", ViewKind::Top).0, ViewKind::Top, "t".into());
        o.trim();
        assert_eq!(take(&o), ["a", "t"], "queued messages survive a trim");
        o.trim();
        let g = crate::sync::lock(&o.inner);
        assert_eq!(g.direct.capacity(), 0);
        assert_eq!(g.slots.capacity(), 0);
    }

    #[test]
    fn dropped_views_are_not_sent() {
        let o = Outbox::new(4);
        let k = key("b", ViewKind::Around);
        o.offer_view(&k.0, k.1, "x".into());
        o.drop_view(&k);
        assert!(o.status().empty);
        assert!(take(&o).is_empty());
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
        assert_eq!(take(&o), ["a2", "b1"]);
        o.offer_view(&b.0, b.1, "b2".into());
        o.offer_view(&a.0, a.1, "a3".into());
        assert_eq!(take(&o), ["b2", "a3"]);
        assert!(o.status().empty);
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
        assert_eq!(take(&o), ["2"]);
        assert_eq!(o.view_pending_since(&me.0, me.1), None, "written");
        o.offer_view(&me.0, me.1, "3".into());
        assert!(o.view_pending_since(&me.0, me.1).expect("pending again") >= since);
    }

    /// A message wakes the waiting writer; one queued while the writer has taken nothing since
    /// it was woken starts the wait the slow-client check looks at, until the writer takes.
    #[test]
    fn messages_wake_the_writer_and_a_writer_that_takes_nothing_is_noticed() {
        let (waker, count) = counting_waker();
        let woken = || count.load(Ordering::Relaxed);
        let o = Outbox::new(8);
        o.push(Message::Text("welcome".into()));
        assert_eq!(
            o.status().waiting_since,
            None,
            "before the writer's first take, the welcome waits for the upgrade response"
        );
        assert_eq!(take_with(&o, &waker).0, Take::Batch);
        assert_eq!(
            crate::sync::lock(&o.inner).direct.capacity(),
            0,
            "an idle session keeps no queue grown by its welcome"
        );
        assert_eq!(take_with(&o, &waker).0, Take::Wait);
        session_signalled(&o);
        // A push from the hub.
        let me = key("b", ViewKind::Me);
        o.offer_view(&me.0, me.1, "rank".into());
        assert_eq!(woken(), 1, "the waiting writer is woken");
        assert!(
            !session_signalled(&o),
            "a message for a waiting writer does not wake the session"
        );
        assert_eq!(
            o.status().waiting_since,
            None,
            "the writer was waiting: nothing waits on it"
        );
        o.push(Message::Text("b".into()));
        assert_eq!(woken(), 1, "a woken writer is not woken again");
        assert!(
            o.status().waiting_since.is_some(),
            "b waits on a writer that took nothing yet"
        );
        assert!(session_signalled(&o), "the wait is the session's to check");
        let (step, batch) = take_with(&o, &waker);
        assert_eq!((step, batch.len()), (Take::Batch, 2));
        assert_eq!(o.status().waiting_since, None, "the writer took");
        assert_eq!(take_with(&o, &waker).0, Take::Wait);
        o.writer_gone();
        o.push(Message::Text("c".into()));
        assert!(o.status().gone);
        assert_eq!(
            o.status().waiting_since,
            None,
            "nothing waits on a writer that is gone"
        );
    }

    /// An update put beside a submission awaiting its answer waits for that answer: the writer
    /// is woken by the answer and takes both in one pass. Without a submission in flight, the
    /// update wakes the writer itself.
    #[test]
    fn an_update_put_beside_a_pending_answer_goes_out_with_it() {
        let (waker, count) = counting_waker();
        let woken = || count.load(Ordering::Relaxed);
        let o = Arc::new(Outbox::new(8));
        let me = key("b", ViewKind::Me);
        assert_eq!(take_with(&o, &waker).0, Take::Wait);

        let submitting = o.submitting();
        assert!(o.put_view(&me.0, me.1, &"rank".into()));
        assert!(
            !o.put_view(&me.0, me.1, &"newer".into()),
            "an update still unsent is not replaced here"
        );
        o.wake_unless_answering();
        assert_eq!(
            woken(),
            0,
            "the answer is on its way: the update waits for it"
        );
        drop(submitting);
        o.push(Message::Text("ack".into()));
        assert_eq!(woken(), 1);
        assert_eq!(take(&o), ["ack", "rank"], "one pass takes both");

        assert_eq!(take_with(&o, &waker).0, Take::Wait);
        assert!(o.put_view(&me.0, me.1, &"rank 2".into()));
        o.wake_unless_answering();
        assert_eq!(woken(), 2, "no answer pending: the update wakes the writer");
    }

    /// Closing sends the answers still queued, then the close frame, and nothing after: view
    /// updates and a due ping are dropped.
    #[test]
    fn the_close_frame_follows_the_answers_and_ends_the_output() {
        let o = Outbox::new(8);
        o.offer_view(&key("b", ViewKind::Top).0, ViewKind::Top, "t".into());
        o.push(Message::Text("error".into()));
        o.ping();
        o.close(None);
        let (step, batch) = take_with(&o, Waker::noop());
        assert_eq!(step, Take::Batch);
        assert!(matches!(&batch[..], [Message::Text(e), Message::Close(None)] if e == "error"));
        assert_eq!(take_with(&o, Waker::noop()).0, Take::Done);
        let closing = Outbox::new(8);
        closing.close(None);
        closing.end();
        assert!(
            matches!(
                &take_with(&closing, Waker::noop()).1[..],
                [Message::Close(None)]
            ),
            "an end keeps the close frame asked for before it"
        );
        let gone = Outbox::new(8);
        gone.push(Message::Text("unsent".into()));
        gone.end();
        assert_eq!(
            take_with(&gone, Waker::noop()).0,
            Take::Done,
            "nothing is written after the end"
        );
    }
}
