//! Redis Cluster: Scorecast on a local 3-master cluster started by the harness
//! (`scorecast_tests::cluster`). Boards and queues whose slots live on different masters, used
//! through two instances; every script runs on the master owning its slot.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use scorecast_server::queue::{NewJob, Queue};
use scorecast_tests::cluster::{Cluster, ClusterApp};
use scorecast_tests::ws::WsClient;
use scorecast_tests::{id, score_of};
use serde_json::json;

const PUSH_WITHIN: Duration = Duration::from_secs(5);

/// Two boards whose slots live on different masters, created and scored through instance A and
/// B crosswise, each watched from the other instance: every push arrives, every script ran on
/// the master that owns its board; a ban on every board and its lift reach both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_on_different_masters_are_shared_by_two_instances() {
    let cluster = Cluster::start(3, 0).await;
    let spread = cluster
        .ids_on_each_master("board", |b| format!("lb:{{{b}}}:config"))
        .await;
    let ((b1, m1), (b2, m2)) = (spread[0].clone(), spread[1].clone());
    assert_ne!(m1, m2, "the two boards live on different masters");
    let a = ClusterApp::start(&cluster, |_| {}).await;
    let b = ClusterApp::start(&cluster, |_| {}).await;
    a.board(&b1, json!({})).await;
    b.board(&b2, json!({})).await;

    // The board index (one key) and each board's config (on its own master) read back.
    let listed = a.call(Method::GET, "/v1/boards", None, false).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let text = listed.body.to_string();
    assert!(text.contains(&b1) && text.contains(&b2), "{text}");

    let mut on_b = WsClient::connect(&b.ws_url()).await;
    let snap = on_b.subscribe(&b1, "top", json!({})).await;
    assert_eq!(snap["type"], "top", "{snap}");
    let mut on_a = WsClient::connect(&a.ws_url()).await;
    let snap = on_a.subscribe(&b2, "top", json!({})).await;
    assert_eq!(snap["type"], "top", "{snap}");

    let before: Vec<u64> = vec![
        cluster.calls(m1, "evalsha").await,
        cluster.calls(m2, "evalsha").await,
    ];
    // A player on instance A submits to board 1 over WebSocket; instance B scores board 2.
    let mut alice = WsClient::connect(&a.ws_url()).await;
    assert_eq!(
        alice.hello(&a.token("alice", None)).await["type"],
        "welcome"
    );
    let ack = alice.submit("s-1", &b1, 42).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    b.score(&b2, "bob", 7).await;

    let top = on_b
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && v["board"] == b1.as_str() && score_of(v, "alice") == Some(42)
        })
        .await;
    assert_eq!(top["total"], 1);
    let top = on_a
        .recv_until(PUSH_WITHIN, |v| {
            v["type"] == "top" && v["board"] == b2.as_str() && score_of(v, "bob") == Some(7)
        })
        .await;
    assert_eq!(top["total"], 1);
    // Each board's submission script ran on its own master.
    assert!(cluster.calls(m1, "evalsha").await > before[0]);
    assert!(cluster.calls(m2, "evalsha").await > before[1]);

    // The same submission id again is applied once (dedup on the board's slot).
    let again = alice.submit("s-1", &b1, 42).await;
    assert_eq!(again["type"], "ack", "{again}");
    let read = b
        .call(
            Method::GET,
            &format!("/v1/boards/{b1}/top?limit=5"),
            None,
            false,
        )
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(score_of(&read.body, "alice"), Some(42), "{:?}", read.body);

    // notify published through instance B reaches alice's session on instance A.
    let player = id("alice");
    let mut reached = (0, 0);
    for _ in 0..100 {
        reached = b
            .state
            .hub
            .notify(&player, "reward", json!({"gold": 5}))
            .await
            .expect("notify");
        if reached.1 > 0 {
            break;
        }
        // The instance subscribes to alice's channel right after her hello: retry until then.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(reached, (0, 1), "no session on B, one other instance");
    let n = alice.recv_type("notify").await;
    assert_eq!(n["payload"], json!({"gold": 5}));

    // A ban on every board through A reaches both masters' boards (its intent on the index's
    // slot, each board's step on its own); its lift through B frees both.
    let r = a
        .admin(Method::PUT, "/admin/bans/bob", json!({"reason": "cluster"}))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    for board in [&b1, &b2] {
        let refused = b
            .admin(
                Method::POST,
                &format!("/admin/boards/{board}/players/bob/score"),
                json!({"points": 1}),
            )
            .await;
        assert_eq!(refused.code(), "forbidden", "{board}");
    }
    let lifted = b.call(Method::DELETE, "/admin/bans/bob", None, true).await;
    assert_eq!(lifted.status, 204, "{:?}", lifted.body);
    for board in [&b1, &b2] {
        let ok = a
            .admin(
                Method::POST,
                &format!("/admin/boards/{board}/players/bob/score"),
                json!({"points": 1}),
            )
            .await;
        assert_eq!(ok.status, 200, "{board}: {:?}", ok.body);
    }
    let list = a.call(Method::GET, "/admin/bans", None, true).await;
    assert_eq!(list.body["bans"], json!([]), "{:?}", list.body);
}

fn job(n: usize) -> NewJob {
    NewJob::new(&id("work"), &json!({ "n": n }))
        .unwrap()
        .id(id(&format!("j{n}")))
}

/// A queue on each master: jobs enqueued, claimed by concurrent blocking claimers and acked
/// exactly once; a lapsed lease redelivered by the reaper; a job out of attempts dead-lettered;
/// the promoter and reaper (running in the instance) cover every queue on every master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_on_each_master_runs_every_job_exactly_once() {
    let cluster = Cluster::start(3, 0).await;
    let spread = cluster
        .ids_on_each_master("queue", |q| format!("q:{{{q}}}:ready"))
        .await;
    assert_eq!(spread.len(), 3);
    let app = ClusterApp::start(&cluster, |_| {}).await;
    const JOBS: usize = 60;

    for (name, port) in &spread {
        let q: Queue = app.state.queues.get(&id(name));
        for n in 0..JOBS {
            q.enqueue(job(n)).await.expect("enqueue");
        }
        assert_eq!(q.counts().await.unwrap().ready, JOBS as u64);
        // The queue's keys are on its master alone.
        let mut direct = cluster
            .nodes
            .iter()
            .find(|n| n.port == *port)
            .unwrap()
            .conn()
            .await
            .unwrap();
        let ready: u64 = redis::cmd("ZCARD")
            .arg(format!("q:{{{name}}}:ready"))
            .query_async(&mut direct)
            .await
            .unwrap();
        assert_eq!(ready, JOBS as u64, "queue {name} lives on {port}");

        // Four claimers, blocking on the master that owns the queue's slot.
        let done: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (q, done) = (q.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                while let Some(c) = q
                    .claim_wait(Duration::from_secs(30), Duration::from_millis(300))
                    .await
                    .expect("claim")
                {
                    q.ack(&id(c.job.id.as_str()), &c.lease.token)
                        .await
                        .expect("ack");
                    *done
                        .lock()
                        .unwrap()
                        .entry(c.job.id.to_string())
                        .or_default() += 1;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let done = done.lock().unwrap().clone();
        assert_eq!(done.len(), JOBS, "queue {name}: every job ran");
        assert!(done.values().all(|n| *n == 1), "queue {name}: exactly once");

        // A lapsed lease: redelivered by the reaper with the next attempt; the late ack loses.
        q.enqueue(
            NewJob::new(&id("work"), &json!("lapse"))
                .unwrap()
                .id(id("lapse")),
        )
        .await
        .unwrap();
        let first = q
            .claim(Duration::from_millis(200))
            .await
            .unwrap()
            .expect("claimed");
        let second = q
            .claim_wait(Duration::from_secs(30), Duration::from_secs(15))
            .await
            .unwrap()
            .expect("redelivered after the lease lapsed");
        assert_eq!((second.job.id.as_str(), second.job.attempts), ("lapse", 2));
        let late = q.ack(&id("lapse"), &first.lease.token).await.unwrap_err();
        assert_eq!(late.code.as_str(), "lease_lost");
        q.ack(&id("lapse"), &second.lease.token).await.unwrap();

        // Out of attempts: the reaper dead-letters it; retry brings it back once.
        q.enqueue(
            NewJob::new(&id("work"), &json!("dead"))
                .unwrap()
                .id(id("dead"))
                .max_attempts(1),
        )
        .await
        .unwrap();
        q.claim(Duration::from_millis(100))
            .await
            .unwrap()
            .expect("claimed");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while q.counts().await.unwrap().dead == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "queue {name}: no dead letter"
            );
            // The reaper runs on its own schedule (the lease's end): nothing to await here.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (total, dead) = q.dead(0, 10).await.unwrap();
        assert_eq!((total, dead[0].job.id.as_str()), (1, "dead"));
        q.retry(&id("dead")).await.unwrap();
        let c = q
            .claim_wait(Duration::from_secs(30), Duration::from_secs(5))
            .await
            .unwrap()
            .expect("retried");
        assert_eq!(c.job.id.as_str(), "dead");
        q.ack(&id("dead"), &c.lease.token).await.unwrap();
        let counts = q.counts().await.unwrap();
        assert_eq!(
            (counts.ready, counts.delayed, counts.processing, counts.dead),
            (0, 0, 0, 0)
        );
    }
    // The index lists the three queues (it lives on one slot, written beside each enqueue).
    let names: HashSet<String> = app
        .state
        .queues
        .names()
        .await
        .unwrap()
        .iter()
        .map(|n| n.to_string())
        .collect();
    for (name, _) in &spread {
        assert!(names.contains(name), "{name} in {names:?}");
    }
}

/// 3 masters + 3 replicas: the master owning a busy board's slot is killed while players submit
/// (each submission retried with its id until acknowledged). The replica takes over,
/// submissions go on, the view watching through the killed node's pub/sub resyncs, nothing is
/// counted twice; what was acknowledged and then lost (replication is asynchronous) is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_failover_mid_load_counts_once_and_resyncs_views() {
    let mut cluster = Cluster::start(3, 1).await;
    let board = "busy";
    let master = cluster.owner_of(&format!("lb:{{{board}}}:config")).await;
    let a = Arc::new(ClusterApp::start(&cluster, |_| {}).await);
    // Instance B's plain pub/sub connection (notify) goes to the doomed master first; its sharded
    // subscription of the board is there too (the master owning the board's slot).
    let b = ClusterApp::start_on(&cluster.url_first(master), |_| {}).await;
    a.board(board, json!({})).await;
    // The board itself is on the replica before the load starts (what this test measures is
    // the loss of acknowledged submissions, not of a config written just before the kill).
    cluster.wait_replica_caught_up(master).await;
    let mut viewer = WsClient::connect(&b.ws_url()).await;
    assert_eq!(
        viewer.subscribe(board, "top", json!({})).await["type"],
        "top"
    );

    const PLAYERS: usize = 6;
    const EACH: usize = 60;
    let acked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let progress = Arc::new(tokio::sync::Notify::new());
    let retries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for p in 0..PLAYERS {
        let (a, acked, progress, retries) =
            (a.clone(), acked.clone(), progress.clone(), retries.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..EACH {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
                loop {
                    let r = a
                        .admin(
                            Method::POST,
                            &format!("/admin/boards/busy/players/p{p}/score"),
                            json!({"points": 1, "id": format!("p{p}-{n}")}),
                        )
                        .await;
                    if r.status == 200 {
                        break;
                    }
                    assert_eq!(
                        r.status, 503,
                        "only unavailable while failing over: {:?}",
                        r.body
                    );
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "p{p}-{n} never acknowledged"
                    );
                    retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // Back off a little before the retry (a client's retry policy).
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                acked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                progress.notify_waiters();
            }
        }));
    }
    // Mid-load: a third of the submissions acknowledged.
    loop {
        let notified = progress.notified();
        if acked.load(std::sync::atomic::Ordering::SeqCst) >= PLAYERS * EACH / 3 {
            break;
        }
        notified.await;
    }
    let at_kill = acked.load(std::sync::atomic::Ordering::SeqCst);
    cluster.node(master).kill();
    let killed_at = std::time::Instant::now();
    for t in tasks {
        t.await.unwrap();
    }
    let took = killed_at.elapsed();
    cluster.wait_ok().await;
    let new_master = cluster.owner_of(&format!("lb:{{{board}}}:config")).await;
    assert_ne!(new_master, master, "the replica took over");

    let total = PLAYERS * EACH;
    let read = a
        .call(Method::GET, "/v1/boards/busy/top?limit=100", None, false)
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    let scores: Vec<i64> = (0..PLAYERS)
        .map(|p| score_of(&read.body, &format!("p{p}")).unwrap_or(0))
        .collect();
    let counted: i64 = scores.iter().sum();
    for s in &scores {
        assert!(*s <= EACH as i64, "a submission counted twice: {scores:?}");
    }
    let lost = total as i64 - counted;
    println!(
        "failover: {total} submissions acknowledged ({at_kill} before the kill), {counted} counted, \
         {lost} acknowledged and lost; {} retries; all acknowledged {:.1} s after the kill",
        retries.load(std::sync::atomic::Ordering::Relaxed),
        took.as_secs_f64()
    );

    // The view resynced (its pub/sub node died) and converges on what Redis holds: the resync
    // snapshot itself shows it when the subscription came back after the last submission, a
    // later push when submissions were still going on.
    let resync = viewer
        .recv_until(Duration::from_secs(30), |v| {
            v["type"] == "top" && v["resync"] == true
        })
        .await;
    let p0 = scores[0];
    if score_of(&resync, "p0") != Some(p0) {
        viewer
            .recv_until(Duration::from_secs(30), |v| {
                v["type"] == "top" && score_of(v, "p0") == Some(p0)
            })
            .await;
    }
}

/// `[redis] wait_replicas = 1`: a submission is acknowledged only once a replica of its board's
/// master has it (read back from the replica itself). Prints what the wait costs per
/// submission against an instance without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_replicas_acknowledges_what_a_replica_has_and_its_cost_is_printed() {
    let cluster = Cluster::start(3, 1).await;
    let board = "durable";
    let master = cluster.owner_of(&format!("lb:{{{board}}}:config")).await;
    let replica = cluster.replica_of(master).await;
    let plain = ClusterApp::start(&cluster, |_| {}).await;
    let waiting = ClusterApp::start(&cluster, |s| {
        s.redis.wait_replicas = 1;
        s.redis.wait_timeout_ms = 2_000;
    })
    .await;
    plain.board(board, json!({})).await;

    let mut on_replica = cluster
        .nodes
        .iter()
        .find(|n| n.port == replica)
        .unwrap()
        .conn()
        .await
        .unwrap();
    let _: () = redis::cmd("READONLY")
        .query_async(&mut on_replica)
        .await
        .unwrap();
    const N: u32 = 100;
    let mut per = Vec::new();
    for (app, player) in [(&plain, "fast"), (&waiting, "safe")] {
        let mut spent = Duration::ZERO;
        for n in 0..N {
            let t = std::time::Instant::now();
            app.score(board, player, 1).await;
            spent += t.elapsed();
            if player == "safe" {
                // Acknowledged: the replica has it already.
                let season: String = redis::cmd("ZRANGE")
                    .arg(format!("lb:{{{board}}}:seasons"))
                    .arg(-1)
                    .arg(-1)
                    .query_async::<Vec<String>>(&mut on_replica)
                    .await
                    .unwrap()
                    .pop()
                    .unwrap_or_else(|| "all".into());
                let score: Option<f64> = redis::cmd("ZSCORE")
                    .arg(format!("lb:{{{board}}}:s:{season}"))
                    .arg(player)
                    .query_async(&mut on_replica)
                    .await
                    .unwrap();
                assert!(score.is_some(), "acknowledged #{n} is on the replica");
            }
        }
        per.push(spent.as_secs_f64() * 1e6 / f64::from(N));
    }
    println!(
        "WAIT 1 replica: {:.0} µs per sequential HTTP submission without, {:.0} µs with (+{:.0} µs)",
        per[0],
        per[1],
        per[1] - per[0]
    );
}

/// The figures of BENCHMARKS.md, "Redis Cluster" (ignored: a measurement, not a check; run with
/// `cargo test --release -p scorecast-tests --test e2e -- cluster::throughput --ignored
/// --nocapture`): submissions/s over 32 boards through one instance, on one Redis and on 3
/// masters, and the Redis time per submission script on each node.
#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn throughput_over_many_boards_one_node_vs_three_masters() {
    use scorecast_server::embedded::RedisProcess;
    use scorecast_tests::cluster::command_stats;
    const BOARDS: usize = 32;
    const CLIENTS: usize = 64;
    const RUN: Duration = Duration::from_secs(8);
    let single = RedisProcess::start(&scorecast_tests::temp_dir("bench-single"), false).unwrap();
    let cluster = Cluster::start(3, 0).await;
    let targets: Vec<(&str, String, Vec<u16>)> = vec![
        ("1 node", single.url(), vec![single.port]),
        ("3 masters", cluster.url(), cluster.masters().await),
    ];
    for (name, url, ports) in targets {
        let app = Arc::new(ClusterApp::start_on(&url, |s| s.workers = false).await);
        for b in 0..BOARDS {
            app.board(&format!("m{b}"), json!({"submit_limit": null}))
                .await;
        }
        let mut before = Vec::new();
        for p in &ports {
            before.push(command_stats(*p, "evalsha").await.0);
        }
        let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = tokio::time::Instant::now() + RUN;
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let (app, done) = (app.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                let mut n = c;
                while tokio::time::Instant::now() < stop {
                    app.score(&format!("m{}", n % BOARDS), &format!("p{c}"), 1)
                        .await;
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    n += 1;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let n = done.load(std::sync::atomic::Ordering::Relaxed);
        let mut shards = Vec::new();
        for (p, b) in ports.iter().zip(before) {
            let (calls, us) = command_stats(*p, "evalsha").await;
            shards.push(format!("{} scripts at {us:.1} µs", calls - b));
        }
        println!(
            "{name}: {:.0} submissions/s over {BOARDS} boards, {CLIENTS} HTTP clients; per node: {}",
            n as f64 / RUN.as_secs_f64(),
            shards.join("; ")
        );
        app.handle.stop(true).await;
    }
}

/// The rest of the board administration on the cluster, through two instances: a manual
/// rollover, the audit log, removing a player, and a token revocation made on one instance
/// reaching a session on the other (`sc:{revoked}`, one slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seasons_log_removal_and_revocation_work_on_the_cluster() {
    let cluster = Cluster::start(3, 0).await;
    let a = ClusterApp::start(&cluster, |_| {}).await;
    let b = ClusterApp::start(&cluster, |_| {}).await;
    a.board("s", json!({"submit_limit": null})).await;
    a.score("s", "x", 10).await;
    let r = b.rollover("s", "s2").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["previous_season"], "all");
    a.score("s", "y", 5).await;
    let top = b.call(Method::GET, "/v1/boards/s/top", None, false).await;
    assert_eq!(top.body["season"], "s2", "{:?}", top.body);
    assert_eq!(
        (score_of(&top.body, "y"), score_of(&top.body, "x")),
        (Some(5), None)
    );
    let old = a
        .call(Method::GET, "/v1/boards/s/top?season=all", None, false)
        .await;
    assert_eq!(score_of(&old.body, "x"), Some(10), "{:?}", old.body);

    let log = b
        .call(Method::GET, "/admin/boards/s/log?count=10", None, true)
        .await;
    let entries = log.body["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["player"], "y");
    let del = a
        .call(Method::DELETE, "/admin/boards/s/players/y", None, true)
        .await;
    assert_eq!(del.status, 204);
    let gone = b
        .call(Method::GET, "/v1/boards/s/players/y", None, false)
        .await;
    assert_eq!(gone.status, 404);

    let mut alice = WsClient::connect(&b.ws_url()).await;
    assert_eq!(
        alice.hello(&b.token("alice", None)).await["type"],
        "welcome"
    );
    assert_eq!(alice.submit("r-0", "s", 1).await["type"], "ack");
    let r = a
        .admin(Method::POST, "/admin/players/alice/revoke", json!(null))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    // Instance B learns of it by polling: submit until it says no.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    let refusal = loop {
        n += 1;
        let v = alice.submit(&format!("r-{n}"), "s", 1).await;
        if v["type"] == "rejected" && v["code"] != "rate_limited" {
            break v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still accepted: {v}"
        );
        // Polls at 40/s, under the connection's message limit (50/s by default).
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(refusal["code"], "unauthorized", "{refusal}");
}

/// A tournament on the cluster, through two instances: every tournament key is in the board's
/// slot (the join, submission and end scripts run on its master), the cap holds across the
/// instances, and the end job, run by the instances' own workers at `end_ms`, freezes the
/// standings and pushes `ended` (over the sharded channel) to a watcher on the other instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tournament_runs_and_ends_on_the_cluster() {
    let cluster = Cluster::start(3, 0).await;
    let a = ClusterApp::start(&cluster, |_| {}).await;
    let b = ClusterApp::start(&cluster, |_| {}).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // Time enough for the steps below on a loaded machine; the end job runs by itself.
    let end = now + 8_000;
    a.board(
        "t",
        json!({"submit_limit": null, "tournament": {
            "schedule": {"start_ms": now - 60_000, "end_ms": end},
            "join_required": true, "max_size": 1, "max_attempts": 1}}),
    )
    .await;
    async fn join(api: &scorecast_tests::Api, player: &str) -> scorecast_tests::Resp {
        let token = api.token(player, None);
        api.call_as(Some(&token), Method::POST, "/v1/boards/t/join", None)
            .await
    }
    assert_eq!(join(&a, "kim").await.status, 200);
    assert_eq!(join(&b, "lee").await.code(), "full");

    let mut spectator = WsClient::connect(&b.ws_url()).await;
    spectator.subscribe("t", "top", json!({})).await;
    let mut kim = WsClient::connect(&b.ws_url()).await;
    kim.hello(&b.token("kim", None)).await;
    assert_eq!(kim.submit("k-1", "t", 7).await["type"], "ack");
    let again = kim.submit("k-2", "t", 7).await;
    assert_eq!(again["code"], "no_attempts_left", "{again}");

    let ended = spectator
        .recv_until(Duration::from_millis(8_000 + 15_000), |v| {
            v["type"] == "tournament" && v["event"] == "ended"
        })
        .await;
    assert_eq!(ended["standings"][0]["player"], "kim", "{ended}");
    let fin = a.call(Method::GET, "/v1/boards/t/final", None, false).await;
    assert_eq!(score_of(&fin.body, "kim"), Some(7), "{:?}", fin.body);
}

/// A league on the cluster, through two instances: its three tier boards live on three masters;
/// the tier refusal runs on the tier board's own master; the season-end job (run by hand, as if
/// the day had ended now) reads each tier's buckets on its master, stores the moves in the
/// league's slot and applies them on each tier's master, so the promoted player plays on the
/// next tier, refused on the one they left, and `/v1/leagues/{l}/me` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_league_moves_players_between_tiers_on_different_masters() {
    let cluster = Cluster::start(3, 0).await;
    let a = ClusterApp::start(&cluster, |s| s.workers = false).await;
    let b = ClusterApp::start(&cluster, |s| s.workers = false).await;
    let tiers: Vec<String> = cluster
        .ids_on_each_master("tier", |t| format!("lb:{{{t}}}:config"))
        .await
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let r = a
        .admin(
            Method::PUT,
            "/admin/leagues/cl",
            json!({"tiers": tiers, "bucket_size": 2, "promote": 1, "relegate": 1,
                   "reset": "daily", "board": {"submit_limit": null}}),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    for (p, pts) in [("ann", 30), ("bob", 20)] {
        let path = format!("/admin/boards/{}/players/{p}/score", tiers[0]);
        let api: &scorecast_tests::Api = if p == "ann" { &a } else { &b };
        let r = api.admin(Method::POST, &path, json!({"points": pts})).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let path = format!("/admin/boards/{}/players/ann/score", tiers[1]);
    assert_eq!(
        b.admin(Method::POST, &path, json!({"points": 1}))
            .await
            .code(),
        "wrong_tier"
    );

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let (season, _, _) =
        scorecast_server::jobs::calendar_season(scorecast_shared::Reset::Daily, now).unwrap();
    let payload = scorecast_server::jobs::league::LeagueClosePayload {
        league: "cl".into(),
        season: season.clone(),
        end_ms: now - 1,
    };
    let text = json!({"id": "manual", "kind": "league.close", "payload": payload,
                      "priority": 0, "attempts": 1, "max_attempts": 5})
    .to_string();
    let job: scorecast_server::queue::Job = serde_json::from_str(&text).unwrap();
    scorecast_server::jobs::handle(&b.state, &scorecast_tests::NoNotify, &job)
        .await
        .unwrap();

    let path = format!("/admin/boards/{}/players/ann/score", tiers[0]);
    assert_eq!(
        a.admin(Method::POST, &path, json!({"points": 1}))
            .await
            .code(),
        "wrong_tier"
    );
    let path = format!("/admin/boards/{}/players/ann/score", tiers[1]);
    let r = a.admin(Method::POST, &path, json!({"points": 1})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let me = b
        .call_as(
            Some(&b.token("ann", None)),
            Method::GET,
            "/v1/leagues/cl/me",
            None,
        )
        .await;
    assert_eq!(
        (me.body["tier"].clone(), me.body["board"].clone()),
        (json!(1), json!(tiers[1]))
    );
    let moves = a
        .call(
            Method::GET,
            &format!("/admin/leagues/cl/moves?season={season}"),
            None,
            true,
        )
        .await;
    assert_eq!(
        moves.body["moves"].as_array().map(Vec::len),
        Some(1),
        "{:?}",
        moves.body
    );
    assert!(moves.body["closed_ms"].as_i64().is_some());
}
