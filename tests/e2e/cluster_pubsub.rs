//! Sharded pub/sub on Redis Cluster: board events are `SPUBLISH`ed on the
//! board's slot and each instance `SSUBSCRIBE`s on the master owning it, only for boards with a
//! local viewer; a failover or a slot move ends those subscriptions, and the hub subscribes
//! again where the slot now lives and resyncs the views.

use std::time::Duration;

use scorecast_tests::cluster::{wait_for, Cluster, ClusterApp};
use scorecast_tests::score_of;
use scorecast_tests::ws::WsClient;
use serde_json::json;

const PUSH_WITHIN: Duration = Duration::from_secs(5);
/// A failover (cluster-node-timeout, then the election) or a slot move, then the resubscription.
const MOVE_WITHIN: Duration = Duration::from_secs(30);

async fn on(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// `PUBSUB SHARDNUMSUB` (sharded) or `PUBSUB NUMSUB` (plain) of `channel` on the node `port`.
async fn subscribers(port: u16, sharded: bool, channel: &str) -> i64 {
    let (_, n): (String, i64) = redis::cmd("PUBSUB")
        .arg(if sharded { "SHARDNUMSUB" } else { "NUMSUB" })
        .arg(channel)
        .query_async(&mut on(port).await)
        .await
        .unwrap();
    n
}

/// Waits until `channel` has `want` sharded subscribers on `port`.
async fn wait_sharded(port: u16, channel: &str, want: i64) {
    wait_for(
        &format!("{want} sharded subscribers of {channel} on {port}"),
        || async { subscribers(port, true, channel).await == want },
    )
    .await;
}

/// Two instances, boards on different masters: each instance subscribes on the owning master,
/// only while it has a viewer of the board; the scripts publish with SPUBLISH (never PUBLISH)
/// and the pushes arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_events_travel_on_the_sharded_channel_of_their_master() {
    let cluster = Cluster::start(3, 0).await;
    let spread = cluster
        .ids_on_each_master("shard", |b| format!("lb:{{{b}}}:config"))
        .await;
    let ((b1, m1), (b2, m2)) = (spread[0].clone(), spread[1].clone());
    assert_ne!(m1, m2);
    let (ev1, ev2) = (format!("ev:{{{b1}}}"), format!("ev:{{{b2}}}"));
    let a = ClusterApp::start(&cluster, |_| {}).await;
    let b = ClusterApp::start(&cluster, |_| {}).await;
    a.board(&b1, json!({})).await;
    a.board(&b2, json!({})).await;

    // A watches board 1; B watches both.
    let mut a1 = WsClient::connect(&a.ws_url()).await;
    assert_eq!(a1.subscribe(&b1, "top", json!({})).await["type"], "top");
    let mut b12 = WsClient::connect(&b.ws_url()).await;
    assert_eq!(b12.subscribe(&b1, "top", json!({})).await["type"], "top");
    assert_eq!(b12.subscribe(&b2, "top", json!({})).await["type"], "top");

    // One sharded subscriber per instance with a viewer, on the board's own master; nothing on
    // the plain channels anywhere.
    wait_sharded(m1, &ev1, 2).await;
    wait_sharded(m2, &ev2, 1).await;
    for m in cluster.masters().await {
        assert_eq!(subscribers(m, false, &ev1).await, 0, "plain on {m}");
        assert_eq!(subscribers(m, false, &ev2).await, 0, "plain on {m}");
    }

    let publish_before: u64 = {
        let mut n = 0;
        for m in cluster.masters().await {
            n += cluster.calls(m, "publish").await;
        }
        n
    };
    let spublish_before = cluster.calls(m1, "spublish").await;
    a.score(&b1, "alice", 42).await;
    b.score(&b2, "bob", 7).await;
    let alice = |m: &serde_json::Value| {
        m["type"] == "top" && m["board"] == b1.as_str() && score_of(m, "alice") == Some(42)
    };
    let bob = |m: &serde_json::Value| {
        m["type"] == "top" && m["board"] == b2.as_str() && score_of(m, "bob") == Some(7)
    };
    a1.recv_until(PUSH_WITHIN, alice).await;
    // The two boards flush on their own: B's pushes may come in either order.
    let (mut seen_alice, mut seen_bob) = (false, false);
    while !(seen_alice && seen_bob) {
        let m = b12.recv_until(PUSH_WITHIN, |m| alice(m) || bob(m)).await;
        seen_alice |= alice(&m);
        seen_bob |= bob(&m);
    }
    assert!(cluster.calls(m1, "spublish").await > spublish_before);
    let mut publish_after = 0;
    for m in cluster.masters().await {
        publish_after += cluster.calls(m, "publish").await;
    }
    assert_eq!(publish_after, publish_before, "no plain PUBLISH of events");

    // A's last viewer of board 1 leaves: A unsubscribes there, B stays.
    drop(a1);
    wait_sharded(m1, &ev1, 1).await;
    b.score(&b1, "carol", 5).await;
    b12.recv_until(PUSH_WITHIN, |m| {
        m["type"] == "top" && m["board"] == b1.as_str() && score_of(m, "carol") == Some(5)
    })
    .await;
}

/// 3 masters + 3 replicas: the master owning a watched board dies; its replica takes over,
/// the instance subscribes there, the view gets `resync: true`, and later changes arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_failover_moves_the_subscription_and_resyncs_the_view() {
    let mut cluster = Cluster::start(3, 1).await;
    let board = "failing";
    let channel = format!("ev:{{{board}}}");
    let master = cluster.owner_of(&format!("lb:{{{board}}}:config")).await;
    let replica = cluster.replica_of(master).await;
    let app = ClusterApp::start(&cluster, |_| {}).await;
    app.board(board, json!({})).await;
    let mut viewer = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        viewer.subscribe(board, "top", json!({})).await["type"],
        "top"
    );
    app.score(board, "p1", 1).await;
    viewer
        .recv_until(PUSH_WITHIN, |v| score_of(v, "p1") == Some(1))
        .await;
    wait_sharded(master, &channel, 1).await;
    // Replication is asynchronous (what a failover loses is measured in cluster.rs): here the
    // replica first catches up, so the board is there after the failover.
    cluster.wait_replica_caught_up(master).await;

    cluster.node(master).kill();
    let killed_at = std::time::Instant::now();
    let resync = viewer
        .recv_until(MOVE_WITHIN, |v| v["type"] == "top" && v["resync"] == true)
        .await;
    println!(
        "shard failover: the view resynced {:.1} s after the master was killed",
        killed_at.elapsed().as_secs_f64()
    );
    assert_eq!(score_of(&resync, "p1"), Some(1), "{resync}");
    cluster.wait_ok().await;
    assert_eq!(
        cluster.owner_of(&format!("lb:{{{board}}}:config")).await,
        replica
    );
    assert_eq!(subscribers(replica, true, &channel).await, 1);

    // Changes after the failover arrive through the new master.
    app.score(board, "p2", 2).await;
    viewer
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && v["resync"] != true && score_of(v, "p2") == Some(2)
        })
        .await;
}

/// A board's slot moves to another master (`CLUSTER SETSLOT … MIGRATING/IMPORTING`, `MIGRATE`,
/// `SETSLOT … NODE`): the old master ends the subscription with a `sunsubscribe`, the instance
/// subscribes on the new one, the view resyncs, and later changes arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_move_moves_the_subscription_and_resyncs_the_view() {
    let cluster = Cluster::start(3, 0).await;
    let spread = cluster
        .ids_on_each_master("moving", |b| format!("lb:{{{b}}}:config"))
        .await;
    let ((board, from), (_, to)) = (spread[0].clone(), spread[1].clone());
    let channel = format!("ev:{{{board}}}");
    let app = ClusterApp::start(&cluster, |_| {}).await;
    app.board(&board, json!({})).await;
    app.score(&board, "p1", 1).await;
    let mut viewer = WsClient::connect(&app.ws_url()).await;
    assert_eq!(
        viewer.subscribe(&board, "top", json!({})).await["type"],
        "top"
    );
    wait_sharded(from, &channel, 1).await;

    let slot = cluster.slot(&channel).await;
    let id = |port: u16| async move {
        let id: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query_async(&mut on(port).await)
            .await
            .unwrap();
        id
    };
    let (from_id, to_id) = (id(from).await, id(to).await);
    let setslot = |port: u16, how: &'static str, node: String| async move {
        let _: () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(how)
            .arg(node)
            .query_async(&mut on(port).await)
            .await
            .unwrap();
    };
    setslot(to, "IMPORTING", from_id.clone()).await;
    setslot(from, "MIGRATING", to_id.clone()).await;
    let keys: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(1000)
        .query_async(&mut on(from).await)
        .await
        .unwrap();
    assert!(!keys.is_empty());
    let _: () = redis::cmd("MIGRATE")
        .arg("127.0.0.1")
        .arg(to)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(&keys)
        .query_async(&mut on(from).await)
        .await
        .unwrap();
    setslot(to, "NODE", to_id.clone()).await;
    let moved_at = std::time::Instant::now();
    setslot(from, "NODE", to_id.clone()).await;
    for m in cluster.masters().await {
        if m != to && m != from {
            setslot(m, "NODE", to_id.clone()).await;
        }
    }

    viewer
        .recv_until(MOVE_WITHIN, |v| v["type"] == "top" && v["resync"] == true)
        .await;
    println!(
        "slot move: the view resynced {} ms after the old master gave up the slot",
        moved_at.elapsed().as_millis()
    );
    wait_sharded(to, &channel, 1).await;
    app.score(&board, "p2", 2).await;
    viewer
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && v["resync"] != true && score_of(v, "p2") == Some(2)
        })
        .await;
}
