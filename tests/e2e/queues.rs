//! Queues: the article's priority and delayed queues through the library
//! and HTTP, leases and their loss, backoff, dead letters, the promoter and the reaper, and bad
//! input. Every test has its own redis-server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::queue::{NewJob, Queue, Requeued};
use scorecast_tests::{eventually, id, spawn_app_with, TestApp, ADMIN_TOKEN};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z, a fixed start for manual clocks.
const T0: i64 = 1_741_608_000_000;

fn no_workers(s: &mut Settings) {
    s.workers = false;
}

/// A server without background tasks on a manual clock: every step is explicit.
async fn manual_app() -> TestApp {
    spawn_app_with(no_workers, Clock::manual(T0)).await
}

fn job(kind: &str, payload: Value) -> NewJob {
    NewJob::new(&id(kind), &payload).unwrap()
}

fn queue(app: &TestApp, name: &str) -> Queue {
    app.state.queues.get(&id(name))
}

const LEASE: Duration = Duration::from_secs(30);

/// The article's `higherPriorityJobComesFirst`, through the library: newsletter at priority 5,
/// then password-reset at 0 → password-reset, newsletter, then nothing.
#[tokio::test]
async fn higher_priority_job_comes_first() {
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    let q = queue(&app, "email-jobs");
    q.enqueue(job("email", json!({})).id(id("newsletter")).priority(5))
        .await
        .unwrap();
    q.enqueue(job("email", json!({})).id(id("password-reset")).priority(0))
        .await
        .unwrap();

    assert_eq!(
        q.poll().await.unwrap().map(|j| j.id).as_deref(),
        Some("password-reset")
    );
    assert_eq!(
        q.poll().await.unwrap().map(|j| j.id).as_deref(),
        Some("newsletter")
    );
    assert!(q.poll().await.unwrap().is_none());
}

/// The same through HTTP, with leases: claim password-reset, ack; claim newsletter, ack; 204.
#[tokio::test]
async fn higher_priority_job_comes_first_over_http() {
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    for (job_id, priority) in [("newsletter", 5), ("password-reset", 0)] {
        let r = app
            .admin(Method::POST, "/admin/queues/email-jobs/jobs", json!({"id": job_id, "kind": "email", "payload": {"to": "a@b.c"}, "priority": priority}))
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        assert_eq!(r.body, json!({"id": job_id}));
    }
    let counts = app
        .call(Method::GET, "/admin/queues/email-jobs", None, true)
        .await;
    assert_eq!(
        counts.body,
        json!({"ready": 2, "delayed": 0, "processing": 0, "dead": 0})
    );

    for expected in ["password-reset", "newsletter"] {
        let c = app
            .call(Method::POST, "/admin/queues/email-jobs/claim", None, true)
            .await;
        assert_eq!(c.status, 200, "{:?}", c.body);
        assert_eq!(c.body["job"]["id"], expected);
        assert_eq!(c.body["job"]["kind"], "email");
        assert_eq!(c.body["job"]["payload"], json!({"to": "a@b.c"}));
        assert_eq!(c.body["job"]["attempts"], 1);
        let token = c.body["lease"]["token"].as_str().unwrap();
        assert!(c.body["lease"]["expires_at_ms"].as_i64().unwrap() > 0);
        let a = app
            .admin(
                Method::POST,
                &format!("/admin/queues/email-jobs/jobs/{expected}/ack"),
                json!({"token": token}),
            )
            .await;
        assert_eq!(a.status, 204, "{:?}", a.body);
    }
    let none = app
        .call(Method::POST, "/admin/queues/email-jobs/claim", None, true)
        .await;
    assert_eq!(none.status, 204);
}

/// take() blocks on a dedicated connection: while it waits, the shared connection still
/// serves other calls, and the job enqueued after them reaches the waiting take.
#[tokio::test]
async fn take_blocks_without_holding_the_shared_connection() {
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    let q = queue(&app, "email-jobs");
    let taker = {
        let q = q.clone();
        tokio::spawn(async move { q.take(Duration::from_secs(10)).await })
    };
    // Once the taker is blocked in Redis, the shared connection must still answer at once.
    app.wait_blocked_clients(1).await;
    let started = Instant::now();
    assert_eq!(q.counts().await.unwrap().ready, 0);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the shared connection was held by the blocking take"
    );
    assert!(!taker.is_finished());

    q.enqueue(job("email", json!("hi")).id(id("late")))
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), taker)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.map(|j| j.id).as_deref(), Some("late"));
    assert_eq!(
        q.counts().await.unwrap(),
        Default::default(),
        "take is at-most-once: the job has left Redis"
    );
    // An empty queue: take times out with nothing.
    assert!(q.take(Duration::from_millis(100)).await.unwrap().is_none());
}

/// 1000 jobs of one priority come out in exactly the order they went in.
#[tokio::test]
async fn a_thousand_jobs_of_one_priority_come_out_fifo() {
    let app = manual_app().await;
    let q = queue(&app, "fifo");
    for i in 0..1000 {
        q.enqueue(job("k", json!(i)).id(id(&format!("j{i:04}"))).priority(3))
            .await
            .unwrap();
    }
    // Same clock value for all of them: the counter, not the time, keeps the order.
    for i in 0..1000 {
        let c = q.claim(LEASE).await.unwrap().expect("a job");
        assert_eq!(c.job.id, format!("j{i:04}"));
        assert_eq!(c.job.payload.get(), i.to_string());
    }
    assert!(q.claim(LEASE).await.unwrap().is_none());
}

/// 8 concurrent workers and 5000 jobs enqueued while they run: no failure, and every job is
/// processed exactly once.
#[tokio::test]
async fn eight_workers_process_5000_jobs_exactly_once() {
    const JOBS: usize = 5000;
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    let q = queue(&app, "race");
    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let done = Arc::new(AtomicUsize::new(0));

    let producer = {
        let q = q.clone();
        tokio::spawn(async move {
            for i in 0..JOBS {
                q.enqueue(
                    job("work", json!({"n": i}))
                        .id(id(&format!("w{i}")))
                        .priority((i % 10) as u8),
                )
                .await
                .unwrap();
            }
        })
    };
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (q, seen, done) = (q.clone(), seen.clone(), done.clone());
            tokio::spawn(async move {
                while done.load(Ordering::SeqCst) < JOBS {
                    let Some(c) = q
                        .claim_wait(LEASE, Duration::from_millis(200))
                        .await
                        .unwrap()
                    else {
                        continue;
                    };
                    *seen.lock().unwrap().entry(c.job.id.clone()).or_default() += 1;
                    q.ack(&id(&c.job.id), &c.lease.token).await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    producer.await.unwrap();
    for w in workers {
        tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("workers finish")
            .unwrap();
    }

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), JOBS, "every job was processed");
    assert!(seen.values().all(|n| *n == 1), "no job was processed twice");
    assert_eq!(q.counts().await.unwrap(), Default::default());
}

/// A worker that claims and disappears: after its lease the job goes to another worker (one
/// more attempt counted), and the first worker's late ack is refused with 409 `lease_lost`.
#[tokio::test]
async fn a_vanished_worker_loses_its_lease_and_its_late_ack() {
    let app = manual_app().await;
    app.admin(
        Method::POST,
        "/admin/queues/mail/jobs",
        json!({"id": "m1", "kind": "email"}),
    )
    .await;

    let first = app
        .call(
            Method::POST,
            "/admin/queues/mail/claim?lease_ms=1000",
            None,
            true,
        )
        .await;
    assert_eq!(first.status, 200);
    let first_token = first.body["lease"]["token"].as_str().unwrap().to_owned();
    assert_eq!(first.body["lease"]["expires_at_ms"], T0 + 1000);

    // Still leased: nobody else gets it.
    app.clock.advance(999);
    assert_eq!(
        app.call(Method::POST, "/admin/queues/mail/claim", None, true)
            .await
            .status,
        204
    );

    // The lease lapses; the reaper puts it back in ready at once, by deadline alone.
    app.clock.advance(1);
    let q = queue(&app, "mail");
    let sweep = q.reap().await.unwrap();
    assert_eq!((sweep.moved, sweep.dead), (1, 0));
    assert_eq!(q.counts().await.unwrap().ready, 1);

    let second = app
        .call(
            Method::POST,
            "/admin/queues/mail/claim?lease_ms=1000",
            None,
            true,
        )
        .await;
    assert_eq!(second.status, 200);
    assert_eq!(second.body["job"]["id"], "m1");
    assert_eq!(second.body["job"]["attempts"], 2);
    let second_token = second.body["lease"]["token"].as_str().unwrap().to_owned();
    assert_ne!(first_token, second_token);

    for path in ["ack", "nack", "extend"] {
        let late = app
            .admin(
                Method::POST,
                &format!("/admin/queues/mail/jobs/m1/{path}"),
                json!({"token": first_token}),
            )
            .await;
        assert_eq!(late.status, 409, "{path}: {:?}", late.body);
        assert_eq!(late.code(), "lease_lost");
    }
    // The live lease can be extended past the old deadline, and is honoured.
    let ext = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/m1/extend",
            json!({"token": second_token, "lease_ms": 5000}),
        )
        .await;
    assert_eq!(ext.status, 200, "{:?}", ext.body);
    assert_eq!(ext.body["lease"]["expires_at_ms"], T0 + 1000 + 5000);
    app.clock.advance(4000);
    assert_eq!(
        q.reap().await.unwrap().moved,
        0,
        "an extended lease is not reaped"
    );
    let ok = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/m1/ack",
            json!({"token": second_token}),
        )
        .await;
    assert_eq!(ok.status, 204);
    assert_eq!(q.counts().await.unwrap(), Default::default());
    // Acked: the token is spent, and the id may be reused.
    let again = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/m1/ack",
            json!({"token": second_token}),
        )
        .await;
    assert_eq!(again.code(), "lease_lost");
    let reuse = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs",
            json!({"id": "m1", "kind": "email"}),
        )
        .await;
    assert_eq!(reuse.status, 201);
}

/// The same with the real reaper task: a lease lapses in real time and a waiting claim gets
/// the job without anyone calling reap().
#[tokio::test]
async fn the_reaper_task_redelivers_a_lapsed_lease() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let q = queue(&app, "mail");
    q.enqueue(job("email", json!(1)).id(id("m1")))
        .await
        .unwrap();
    let first = q.claim(Duration::from_millis(300)).await.unwrap().unwrap();
    let second = q
        .claim_wait(LEASE, Duration::from_secs(10))
        .await
        .unwrap()
        .expect("redelivered after the lease");
    assert_eq!((second.job.id.as_str(), second.job.attempts), ("m1", 2));
    let late = q.ack(&id("m1"), &first.lease.token).await.unwrap_err();
    assert_eq!(late.code.as_str(), "lease_lost");
    q.ack(&id("m1"), &second.lease.token).await.unwrap();
}

/// A lease shortened by `extend` lapses at its new deadline, not the old one: the reaper, which
/// planned its next round for the first lease (60 s away, so 30 s: its longest sleep), is woken
/// for the new deadline and puts the job back in ready with nobody claiming; a claim then gets
/// it. The reaper's round after the claim is awaited in Redis's slow log (every command logged),
/// so that the extend comes after it made its plan.
#[tokio::test]
async fn a_lease_shortened_by_extend_lapses_at_its_new_deadline() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let reap = &scorecast_server::scripts::Q_REAP;
    // Loaded now: each of the reaper's rounds is one `EVALSHA <its hash>` in the log.
    let mut c = app.redis_conn_direct().await;
    let _: String = reap.prepare_invoke().load_async(&mut c).await.unwrap();
    app.log_every_command(true).await;
    let q = queue(&app, "short");
    q.enqueue(job("email", json!(1)).id(id("s1")))
        .await
        .unwrap();
    let first = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
    eventually("the reaper's round after the claim", || async {
        app.slow_log().await.iter().any(|args| {
            args[0].eq_ignore_ascii_case("evalsha")
                && args.get(1).map(String::as_str) == Some(reap.get_hash())
        })
    })
    .await;
    app.log_every_command(false).await;

    q.extend(&id("s1"), &first.lease.token, Duration::from_millis(200))
        .await
        .unwrap();
    scorecast_tests::eventually("the shortened lease is reaped", || {
        let q = q.clone();
        async move { q.counts().await.unwrap().ready == 1 }
    })
    .await;
    let second = q
        .claim_wait(LEASE, Duration::from_secs(10))
        .await
        .unwrap()
        .expect("redelivered after the shortened lease, not after 60 s");
    assert_eq!((second.job.id.as_str(), second.job.attempts), ("s1", 2));
    q.ack(&id("s1"), &second.lease.token).await.unwrap();
}

/// A delayed job is not claimable before it is due and is claimable from its due time on,
/// with its priority.
#[tokio::test]
async fn a_delayed_job_is_claimable_exactly_when_due() {
    let app = manual_app().await;
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/remind/jobs",
            json!({"id": "pay", "kind": "email", "delay_ms": 5000, "priority": 0}),
        )
        .await;
    assert_eq!(r.status, 201);
    app.admin(
        Method::POST,
        "/admin/queues/remind/jobs",
        json!({"id": "at", "kind": "email", "run_at_ms": T0 + 5000, "priority": 9}),
    )
    .await;
    app.admin(
        Method::POST,
        "/admin/queues/remind/jobs",
        json!({"id": "now", "kind": "email", "priority": 5}),
    )
    .await;
    let counts = app
        .call(Method::GET, "/admin/queues/remind", None, true)
        .await;
    assert_eq!(
        counts.body,
        json!({"ready": 1, "delayed": 2, "processing": 0, "dead": 0})
    );

    let c = app
        .call(Method::POST, "/admin/queues/remind/claim", None, true)
        .await;
    assert_eq!(c.body["job"]["id"], "now");
    app.clock.advance(4999);
    assert_eq!(
        app.call(Method::POST, "/admin/queues/remind/claim", None, true)
            .await
            .status,
        204,
        "not due yet"
    );
    app.clock.advance(1);
    let c = app
        .call(Method::POST, "/admin/queues/remind/claim", None, true)
        .await;
    assert_eq!(
        c.body["job"]["id"], "pay",
        "due now, and priority 0 comes first"
    );
    let c = app
        .call(Method::POST, "/admin/queues/remind/claim", None, true)
        .await;
    assert_eq!(c.body["job"]["id"], "at");
}

/// With the real clock and the promoter running: a long-poll claim returns a delayed job
/// when it falls due (not before), and a take() — which only the promoter can serve — gets
/// an earlier job scheduled while the promoter sleeps towards a later one.
#[tokio::test]
async fn the_promoter_sleeps_until_due_and_wakes_for_earlier_jobs() {
    let app = spawn_app_with(|_| {}, Clock::Redis).await;
    let q = queue(&app, "later");
    // The promoter now sleeps towards a job an hour away (capped), not polling.
    // Each sweep of the promoter or the reaper lists the queues (one SMEMBERS): wait for the
    // start-up sweeps of both, then for the promoter's sweep that the far job wakes.
    eventually("the start-up sweeps", || async {
        app.redis_command_calls("smembers").await >= 2
    })
    .await;
    let swept = app.redis_command_calls("smembers").await;
    q.enqueue(job("k", json!(0)).id(id("far")).after(3_600_000))
        .await
        .unwrap();
    eventually("the promoter sweeps for the far job", || async {
        app.redis_command_calls("smembers").await > swept
    })
    .await;

    let started = Instant::now();
    q.enqueue(job("k", json!(1)).id(id("soon")).after(300))
        .await
        .unwrap();
    let got = q
        .take(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("promoted and taken");
    assert_eq!(got.id, "soon");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(290),
        "not before due: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "the promoter was woken for the earlier job: {waited:?}"
    );

    let started = Instant::now();
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/later/jobs",
            json!({"id": "poll", "kind": "k", "delay_ms": 300}),
        )
        .await;
    assert_eq!(r.status, 201);
    let c = app
        .call(
            Method::POST,
            "/admin/queues/later/claim?wait_ms=10000",
            None,
            true,
        )
        .await;
    assert_eq!(c.status, 200);
    assert_eq!(c.body["job"]["id"], "poll");
    assert!(started.elapsed() >= Duration::from_millis(290));
    assert_eq!(
        q.counts().await.unwrap().delayed,
        1,
        "the far job stays delayed"
    );
}

/// A long-poll claim with nothing to claim answers 204 after its wait, and does not hold the
/// shared connection meanwhile (other requests are served).
#[tokio::test]
async fn a_long_poll_claim_times_out_with_204_without_blocking_others() {
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    let started = Instant::now();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let (http, url) = (
                app.http.clone(),
                app.url("/admin/queues/idle/claim?wait_ms=1500"),
            );
            tokio::spawn(async move {
                http.post(url)
                    .bearer_auth(ADMIN_TOKEN)
                    .send()
                    .await
                    .unwrap()
                    .status()
            })
        })
        .collect();
    // All four wait in Redis (BLPOP on their own connections) before the shared one is used.
    app.wait_blocked_clients(4).await;
    let during = Instant::now();
    let counts = app
        .call(Method::GET, "/admin/queues/idle", None, true)
        .await;
    assert_eq!(counts.status, 200);
    assert!(during.elapsed() < Duration::from_millis(1000));
    for w in waiters {
        assert_eq!(w.await.unwrap(), 204);
    }
    assert!(started.elapsed() >= Duration::from_millis(1500));
}

/// 250 due jobs with a promoter bound of 100: promoted 100, 100, 50 over successive runs, all
/// of them in the end, in FIFO order.
#[tokio::test]
async fn a_batch_larger_than_the_bound_is_promoted_over_successive_runs() {
    let app = manual_app().await;
    assert_eq!(app.state.settings.queues.promote_batch, 100);
    let q = queue(&app, "bulk");
    for i in 0..250 {
        q.schedule(job("k", json!(i)).id(id(&format!("b{i:03}"))), T0 + 1000)
            .await
            .unwrap();
    }
    let first = q.promote_due().await.unwrap();
    assert_eq!(
        (first.moved, first.next_ms),
        (0, Some(T0 + 1000)),
        "nothing due yet"
    );

    app.clock.advance(1000);
    let mut runs = Vec::new();
    for _ in 0..4 {
        runs.push(q.promote_due().await.unwrap().moved);
    }
    assert_eq!(runs, vec![100, 100, 50, 0]);
    let c = q.counts().await.unwrap();
    assert_eq!((c.ready, c.delayed), (250, 0));
    for i in 0..250 {
        assert_eq!(q.poll().await.unwrap().unwrap().id, format!("b{i:03}"));
    }
}

/// nack without a delay backs off exponentially (with jitter, never shorter than the previous
/// attempt's longest delay); after max_attempts the job is a dead letter; retry brings it back
/// with fresh attempts. A lapsed lease on the last attempt also ends in dead letters.
#[tokio::test]
async fn backoff_grows_then_dead_letters_then_retry() {
    let app = manual_app().await;
    let base = app.state.settings.queues.backoff_base_ms as i64;
    let q = queue(&app, "flaky");
    q.enqueue(job("k", json!({"n": 1})).id(id("f")).max_attempts(4))
        .await
        .unwrap();

    let mut delays = Vec::new();
    for attempt in 1..=3 {
        let c = q.claim(LEASE).await.unwrap().expect("due again");
        assert_eq!(c.job.attempts, attempt);
        let Requeued::Delayed { delay_ms, .. } =
            q.nack(&id("f"), &c.lease.token, None).await.unwrap()
        else {
            panic!("attempt {attempt} should back off");
        };
        let d = base << (attempt - 1);
        assert!(
            (d / 2..=d).contains(&delay_ms),
            "attempt {attempt}: {delay_ms} not in [{}, {d}]",
            d / 2
        );
        delays.push(delay_ms);
        assert!(q.claim(LEASE).await.unwrap().is_none(), "backing off");
        app.clock.advance(delay_ms);
    }
    assert!(
        delays.windows(2).all(|w| w[0] <= w[1]),
        "backoff grows: {delays:?}"
    );

    let c = q.claim(LEASE).await.unwrap().unwrap();
    assert_eq!(c.job.attempts, 4);
    assert_eq!(
        q.nack(&id("f"), &c.lease.token, None).await.unwrap(),
        Requeued::Dead
    );
    assert_eq!(q.counts().await.unwrap().dead, 1);
    assert!(q.claim(LEASE).await.unwrap().is_none());

    let dead = app
        .call(Method::GET, "/admin/queues/flaky/dead", None, true)
        .await;
    assert_eq!(dead.status, 200);
    assert_eq!(dead.body["total"], 1);
    assert_eq!(dead.body["jobs"][0]["id"], "f");
    assert_eq!(dead.body["jobs"][0]["attempts"], 4);
    assert_eq!(dead.body["jobs"][0]["payload"], json!({"n": 1}));
    assert_eq!(dead.body["jobs"][0]["died_at_ms"], app.clock.now_ms());

    // The id of a dead letter is still present.
    let dup = app
        .admin(
            Method::POST,
            "/admin/queues/flaky/jobs",
            json!({"id": "f", "kind": "k"}),
        )
        .await;
    assert_eq!(dup.code(), "conflict");

    let r = app
        .call(Method::POST, "/admin/queues/flaky/dead/f/retry", None, true)
        .await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    let r = app
        .call(Method::POST, "/admin/queues/flaky/dead/f/retry", None, true)
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (404, "not_found"));
    let c = q
        .claim(Duration::from_millis(100))
        .await
        .unwrap()
        .expect("back in ready");
    assert_eq!(c.job.attempts, 1);

    // An explicit delay wins over backoff.
    assert_eq!(
        q.nack(&id("f"), &c.lease.token, Some(Duration::from_millis(7)))
            .await
            .unwrap(),
        Requeued::Delayed {
            run_at_ms: app.clock.now_ms() + 7,
            delay_ms: 7
        }
    );

    // A job whose last attempt's lease lapses goes to dead letters through the reaper.
    q.enqueue(job("k", json!(null)).id(id("once")).max_attempts(1))
        .await
        .unwrap();
    let c = q.claim(Duration::from_millis(100)).await.unwrap().unwrap();
    assert_eq!(c.job.id, "once");
    app.clock.advance(100);
    let s = q.reap().await.unwrap();
    assert_eq!((s.moved, s.dead), (0, 1));
    let (total, jobs) = q.dead(0, 10).await.unwrap();
    assert_eq!((total, jobs[0].job.id.as_str()), (1, "once"));
}

/// A payload comes back exactly as it was sent: big integers, empty arrays and objects,
/// number formatting — nothing goes through Lua's cjson.
#[tokio::test]
async fn payloads_come_back_byte_for_byte() {
    let app = manual_app().await;
    let payload =
        r#"{"big":123456789012345678901234567890,"empty":[],"obj":{},"f":1.50,"s":"é\u0000"}"#;
    let body = format!(r#"{{"id":"p","kind":"k","payload":{payload}}}"#);
    let r = app
        .http
        .post(app.url("/admin/queues/raw/jobs"))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let claimed = app
        .http
        .post(app.url("/admin/queues/raw/claim"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    let text = claimed.text().await.unwrap();
    assert!(text.contains(&format!(r#""payload":{payload}"#)), "{text}");
}

/// Bad input gets a clear error and changes nothing in Redis.
#[tokio::test]
async fn bad_input_is_refused_and_nothing_is_enqueued() {
    let app = manual_app().await;
    let ok = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs",
            json!({"id": "exists", "kind": "email"}),
        )
        .await;
    assert_eq!(ok.status, 201);
    let before = app.dump().await;

    let cases: Vec<(&str, Value, &str)> = vec![
        ("/admin/queues/mail/jobs", json!({"kind": "email", "priority": 10}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "priority": -1}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "priority": "high"}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "priority": 2.5}), "bad_request"),
        ("/admin/queues/mail%7Bx%7D/jobs", json!({"kind": "email"}), "invalid_id"),
        ("/admin/queues/a:b/jobs", json!({"kind": "email"}), "invalid_id"),
        ("/admin/queues/a%20b/jobs", json!({"kind": "email"}), "invalid_id"),
        ("/admin/queues/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/jobs", json!({"kind": "email"}), "invalid_id"),
        ("/admin/queues/mail/jobs", json!({"id": "a:b", "kind": "email"}), "invalid_id"),
        ("/admin/queues/mail/jobs", json!({"id": "", "kind": "email"}), "invalid_id"),
        ("/admin/queues/mail/jobs", json!({"kind": "e mail"}), "invalid_id"),
        ("/admin/queues/mail/jobs", json!({"payload": {}}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "unknown": 1}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "delay_ms": 5, "run_at_ms": 5}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "delay_ms": -5}), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"kind": "email", "max_attempts": 0}), "bad_request"),
        ("/admin/queues/mail/jobs", json!(["kind", "email"]), "bad_request"),
        ("/admin/queues/mail/jobs", json!({"id": "exists", "kind": "email", "priority": 1}), "conflict"),
    ];
    for (path, body, code) in cases {
        let r = app.admin(Method::POST, path, body.clone()).await;
        assert_eq!(r.code(), code, "{path} {body}: {:?}", r.body);
        assert!(!r.body["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    // Malformed JSON (a truncated payload), and no body at all.
    for raw in [r#"{"kind":"email","payload":{"a":"#, ""] {
        let r = app
            .http
            .post(app.url("/admin/queues/mail/jobs"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{raw:?}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "bad_request");
    }
    // Bad claims, acks and retries.
    for (method, path, body, status, code) in [
        (
            Method::POST,
            "/admin/queues/mail/claim?wait_ms=999999",
            None,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/admin/queues/mail/claim?lease_ms=0",
            None,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/admin/queues/mail/claim?lease_ms=-5",
            None,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/admin/queues/mail/jobs/exists/ack",
            Some(json!({"token": "nope"})),
            409,
            "lease_lost",
        ),
        (
            Method::POST,
            "/admin/queues/mail/jobs/exists/nack",
            Some(json!({"token": "nope"})),
            409,
            "lease_lost",
        ),
        (
            Method::POST,
            "/admin/queues/mail/jobs/a:b/ack",
            Some(json!({"token": "nope"})),
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            "/admin/queues/mail/jobs/exists/ack",
            Some(json!({})),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/admin/queues/mail/dead/exists/retry",
            None,
            404,
            "not_found",
        ),
        (
            Method::GET,
            "/admin/queues/mail/dead?limit=0",
            None,
            400,
            "bad_request",
        ),
    ] {
        let r = app.call(method, path, body, true).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{path}: {:?}",
            r.body
        );
    }
    // Without the admin token.
    let r = app
        .call(
            Method::POST,
            "/admin/queues/mail/jobs",
            Some(json!({"kind": "email"})),
            false,
        )
        .await;
    assert_eq!(r.code(), "unauthorized");

    assert_eq!(app.dump().await, before, "nothing was enqueued or changed");
    let c = queue(&app, "mail").counts().await.unwrap();
    assert_eq!(c.ready, 1);
}

/// Nothing lost across a Redis crash: ready, delayed and leased jobs are all there after
/// redis-server is killed and restarted (AOF), the lease still holds, and every job is then
/// processed exactly once.
#[tokio::test]
async fn jobs_survive_a_redis_crash() {
    let mut app = manual_app().await;
    let q = queue(&app, "durable");
    for n in 0..3 {
        q.enqueue(job("work", json!({ "n": n })).id(id(&format!("j{n}"))))
            .await
            .unwrap();
    }
    q.enqueue(job("work", json!({})).id(id("later")).after(60_000))
        .await
        .unwrap();
    let held = q.claim(LEASE).await.unwrap().expect("a ready job");
    let before = q.counts().await.unwrap();

    // What reached the AOF file survives (not the second `everysec` may hold back).
    app.wait_aof_written().await;
    app.redis.kill();
    assert!(
        q.claim(LEASE).await.is_err(),
        "Redis is down: the claim fails, nothing is lost"
    );
    app.redis.restart().unwrap();

    // The shared connection reconnects by itself; wait for it (bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        match q.counts().await {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("no reconnect: {e}"),
        }
    };
    assert_eq!(format!("{after:?}"), format!("{before:?}"));
    q.ack(&id(&held.job.id), &held.lease.token).await.unwrap();

    app.clock.advance(60_000);
    let mut seen = vec![held.job.id.clone()];
    while let Some(c) = q.claim(LEASE).await.unwrap() {
        q.ack(&id(&c.job.id), &c.lease.token).await.unwrap();
        seen.push(c.job.id);
    }
    seen.sort();
    assert_eq!(seen, ["j0", "j1", "j2", "later"]);
}

/// A process that dies between BZPOPMIN and reading the body (the article's at-most-once take)
/// leaves a body in no set: that job is gone, so its id can be enqueued again and the new job
/// is delivered whole.
#[tokio::test]
async fn an_id_left_by_a_crashed_take_is_free_again() {
    let app = manual_app().await;
    let q = queue(&app, "crashy");
    q.enqueue(job("work", json!({"v": 1})).id(id("x")))
        .await
        .unwrap();
    let mut c = app.redis_conn().await;
    // What BZPOPMIN did before the process died.
    let popped: Vec<String> = redis::cmd("ZPOPMIN")
        .arg("q:{crashy}:ready")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(popped[0], "x");

    q.enqueue(job("work", json!({"v": 2})).id(id("x")))
        .await
        .unwrap();
    let claimed = q.claim(LEASE).await.unwrap().expect("the new job");
    assert_eq!(claimed.job.payload.get(), r#"{"v":2}"#);
    assert_eq!(claimed.job.attempts, 1);
    // A job that is really present still refuses its id.
    let dup = q.enqueue(job("work", json!({})).id(id("x"))).await;
    assert_eq!(dup.unwrap_err().code, scorecast_shared::ErrorCode::Conflict);
}

/// A lease token is valid until its job is acked, nacked, reaped or re-claimed: after a nack
/// and after a reap (before anyone re-claims) `ack`, `nack` and `extend` are 409 `lease_lost`
/// and change nothing; a lease past its deadline that no reaper has swept yet is still valid.
#[tokio::test]
async fn lease_tokens_end_with_nack_and_reap_not_with_the_deadline() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    let late = |path: &'static str, token: String| {
        let app = &app;
        async move {
            app.admin(
                Method::POST,
                &format!("/admin/queues/mail/jobs/m1/{path}"),
                if path == "extend" {
                    json!({"token": token, "lease_ms": 1000})
                } else {
                    json!({"token": token})
                },
            )
            .await
        }
    };
    q.enqueue(job("email", json!(1)).id(id("m1")))
        .await
        .unwrap();

    // Nacked: the token is spent.
    let c = q.claim(Duration::from_millis(1000)).await.unwrap().unwrap();
    q.nack(&id("m1"), &c.lease.token, Some(Duration::from_millis(0)))
        .await
        .unwrap();
    let before = app.dump().await;
    for path in ["ack", "nack", "extend"] {
        let r = late(path, c.lease.token.clone()).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (409, "lease_lost"),
            "{path} after nack"
        );
        assert_eq!(
            app.dump().await,
            before,
            "{path} after nack changed something"
        );
    }

    // Reaped, not yet re-claimed: spent too.
    let c = q.claim(Duration::from_millis(1000)).await.unwrap().unwrap();
    app.clock.advance(1000);
    assert_eq!(q.reap().await.unwrap().moved, 1);
    let before = app.dump().await;
    for path in ["ack", "nack", "extend"] {
        let r = late(path, c.lease.token.clone()).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (409, "lease_lost"),
            "{path} after reap"
        );
        assert_eq!(
            app.dump().await,
            before,
            "{path} after reap changed something"
        );
    }
    assert_eq!(q.counts().await.unwrap().ready, 1);

    // Past its deadline but not reaped: the holder may still ack (recovery is by the reaper).
    let c = q.claim(Duration::from_millis(1000)).await.unwrap().unwrap();
    app.clock.advance(5000);
    let r = late("ack", c.lease.token.clone()).await;
    assert_eq!(r.status, 204, "{:?}", r.body);
    assert_eq!(q.counts().await.unwrap(), Default::default());
}

/// Backoff is capped: with base 1 s and cap 3 s, the delays after attempts 3 to 7 stay within
/// [cap/2, cap] instead of doubling on.
#[tokio::test]
async fn backoff_is_capped() {
    let app = spawn_app_with(
        |s| {
            no_workers(s);
            s.queues.backoff_base_ms = 1_000;
            s.queues.backoff_max_ms = 3_000;
        },
        Clock::manual(T0),
    )
    .await;
    let q = queue(&app, "capped");
    q.enqueue(job("k", json!(null)).id(id("c")).max_attempts(10))
        .await
        .unwrap();
    for attempt in 1..=7u32 {
        let c = q.claim(LEASE).await.unwrap().expect("due");
        assert_eq!(c.job.attempts, attempt);
        let Requeued::Delayed { delay_ms, .. } =
            q.nack(&id("c"), &c.lease.token, None).await.unwrap()
        else {
            panic!("attempt {attempt} should back off");
        };
        let d = (1_000i64 << (attempt - 1)).min(3_000);
        assert!(
            (d / 2..=d).contains(&delay_ms),
            "attempt {attempt}: {delay_ms} not in [{}, {d}]",
            d / 2
        );
        app.clock.advance(delay_ms);
    }
}
