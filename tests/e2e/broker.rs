//! The pub/sub broker on its own, against a real redis-server: what it subscribes follows what
//! its listener wants, what it delivers is what was published, and a lost connection comes back
//! as a resync. No hub: a recording listener stands in for it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use scorecast_server::broker::{Broker, Feed, Listener, Wanted};
use scorecast_server::conn::{connect, Target};
use scorecast_shared::Id;
use scorecast_tests::start_test_redis;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// Generous on a loaded machine: every wait below polls or awaits an event until this passes.
const WITHIN: Duration = Duration::from_secs(10);

/// What the listener was fed, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Got {
    Board(String, Vec<u8>),
    Notify(String, Vec<u8>),
    ResyncAll,
    Resync(String),
}

#[derive(Default)]
struct Recorder {
    wanted: Mutex<(Vec<Id>, Vec<Id>)>,
    got: Mutex<Vec<Got>>,
    fed: Notify,
}

impl Listener for Recorder {
    fn wanted(&self) -> Wanted {
        let (boards, players) = self.wanted.lock().unwrap().clone();
        Wanted { boards, players }
    }

    fn feed(&self, item: Feed<'_>) {
        let got = match item {
            Feed::Board { board, payload } => Got::Board(board.into(), payload.into()),
            Feed::Notify { player, payload } => Got::Notify(player.into(), payload.into()),
            Feed::Resync(None) => Got::ResyncAll,
            Feed::Resync(Some(b)) => Got::Resync(b.to_string()),
        };
        self.got.lock().unwrap().push(got);
        self.fed.notify_waiters();
    }
}

impl Recorder {
    /// Waits until something fed matches `f`; panics after [`WITHIN`].
    async fn until(&self, what: &str, f: impl Fn(&Got) -> bool) -> Got {
        let deadline = Instant::now() + WITHIN;
        loop {
            let fed = self.fed.notified();
            tokio::pin!(fed);
            fed.as_mut().enable();
            if let Some(g) = self.got.lock().unwrap().iter().find(|g| f(g)) {
                return g.clone();
            }
            if tokio::time::timeout_at(deadline, fed).await.is_err() {
                panic!(
                    "{what} not fed within {WITHIN:?}: {:?}",
                    self.got.lock().unwrap()
                );
            }
        }
    }
}

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// `PUBSUB NUMSUB channel` until it equals `want` (or panics after [`WITHIN`]).
async fn until_subscribers(c: &mut redis::aio::MultiplexedConnection, channel: &str, want: u64) {
    let deadline = Instant::now() + WITHIN;
    loop {
        let (_, n): (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(c)
            .await
            .unwrap();
        if n == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{channel} has {n} subscribers, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn publish(c: &mut redis::aio::MultiplexedConnection, channel: &str, body: &str) -> u64 {
    redis::cmd("PUBLISH")
        .arg(channel)
        .arg(body)
        .query_async(c)
        .await
        .unwrap()
}

/// The broker subscribes what the listener wants and nothing else: once `wait_board` returns,
/// an event published on the board's channel is fed as `Feed::Board` with its exact bytes, a
/// channel nobody wants has no subscriber, `publish_notify` reaches the wanted player's channel
/// (counted once: this broker) and comes back as `Feed::Notify`; after the wanted set changes,
/// the old channel is dropped and the new one subscribed.
#[tokio::test]
async fn the_broker_carries_exactly_the_wanted_channels() {
    let redis = start_test_redis();
    let target = Target::Single(redis.url());
    let broker = Broker::new(&target, connect(&target).await.unwrap()).unwrap();
    let rec = Arc::new(Recorder::default());
    *rec.wanted.lock().unwrap() = (vec![id("b1")], vec![id("p1")]);
    let (shutdown, rx) = watch::channel(false);
    broker.start(rec.clone(), rx);

    let waited = Instant::now();
    broker.wait_board(&id("b1"), WITHIN).await;
    assert!(
        waited.elapsed() < WITHIN,
        "wait_board gave up instead of seeing the confirmation"
    );
    let mut c = redis::Client::open(redis.direct_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    assert_eq!(publish(&mut c, "ev:{b1}", "event-1").await, 1);
    assert_eq!(publish(&mut c, "ev:{b2}", "unwanted").await, 0);
    let got = rec
        .until("the b1 event", |g| matches!(g, Got::Board(..)))
        .await;
    assert_eq!(got, Got::Board("b1".into(), b"event-1".to_vec()));

    until_subscribers(&mut c, "notify:{p1}", 1).await;
    let n = broker.publish_notify(&id("p1"), "hello").await.unwrap();
    assert_eq!(n, 1, "the broker's own subscription is the one receiver");
    let got = rec
        .until("the notify", |g| matches!(g, Got::Notify(..)))
        .await;
    assert_eq!(got, Got::Notify("p1".into(), b"hello".to_vec()));

    *rec.wanted.lock().unwrap() = (vec![id("b2")], vec![]);
    broker.wanted_changed();
    broker.wait_board(&id("b2"), WITHIN).await;
    until_subscribers(&mut c, "ev:{b2}", 1).await;
    until_subscribers(&mut c, "ev:{b1}", 0).await;
    until_subscribers(&mut c, "notify:{p1}", 0).await;
    assert_eq!(publish(&mut c, "ev:{b2}", "event-2").await, 1);
    rec.until("the b2 event", |g| {
        *g == Got::Board("b2".into(), b"event-2".to_vec())
    })
    .await;
    let boards: Vec<Got> = rec
        .got
        .lock()
        .unwrap()
        .iter()
        .filter(|g| matches!(g, Got::Board(..)))
        .cloned()
        .collect();
    assert_eq!(
        boards,
        [
            Got::Board("b1".into(), b"event-1".to_vec()),
            Got::Board("b2".into(), b"event-2".to_vec())
        ],
        "nothing unwanted was fed"
    );
    shutdown.send_replace(true);
}

/// A pub/sub connection killed while new connections are refused (so whatever is published
/// meanwhile is lost for certain) comes back on its own, subscribed to the same channels, and
/// the listener is told to resync every board — only after the loss, never at the first
/// connection.
#[tokio::test]
async fn a_lost_connection_comes_back_and_asks_for_a_resync() {
    let redis = start_test_redis();
    let target = Target::Single(redis.url());
    let broker = Broker::new(&target, connect(&target).await.unwrap()).unwrap();
    let rec = Arc::new(Recorder::default());
    *rec.wanted.lock().unwrap() = (vec![id("b1")], vec![]);
    let (shutdown, rx) = watch::channel(false);
    broker.start(rec.clone(), rx);
    broker.wait_board(&id("b1"), WITHIN).await;
    let mut c = redis::Client::open(redis.direct_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    until_subscribers(&mut c, "ev:{b1}", 1).await;
    assert!(
        !rec.got.lock().unwrap().contains(&Got::ResyncAll),
        "no resync at the first connection"
    );

    redis.refuse_new_connections(true);
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(killed, 1);
    assert_eq!(
        publish(&mut c, "ev:{b1}", "lost").await,
        0,
        "nobody listens"
    );
    redis.refuse_new_connections(false);

    rec.until("the resync", |g| *g == Got::ResyncAll).await;
    until_subscribers(&mut c, "ev:{b1}", 1).await;
    assert_eq!(publish(&mut c, "ev:{b1}", "after").await, 1);
    rec.until("the event after the loss", |g| {
        *g == Got::Board("b1".into(), b"after".to_vec())
    })
    .await;
    assert!(
        !rec.got
            .lock()
            .unwrap()
            .contains(&Got::Board("b1".into(), b"lost".to_vec())),
        "the event published during the outage was not delivered"
    );
    shutdown.send_replace(true);
}
