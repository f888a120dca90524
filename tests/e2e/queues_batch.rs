//! Queues, the batched paths: ack-and-claim-next, batched claims, bulk enqueue, and the
//! failure history of a job. Every test has its own redis-server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::config::Settings;
use scorecast_server::queue::{
    Claimed, NewJob, Queue, MAX_BULK_BYTES, MAX_BULK_JOBS, MAX_CLAIM_BATCH,
};
use scorecast_shared::ErrorCode;
use scorecast_tests::{id, spawn_app_with, TestApp};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z, a fixed start for manual clocks.
const T0: i64 = 1_741_608_000_000;
const LEASE: Duration = Duration::from_secs(30);

fn no_workers(s: &mut Settings) {
    s.workers = false;
}

async fn manual_app() -> TestApp {
    spawn_app_with(no_workers, Clock::manual(T0)).await
}

fn job(kind: &str, payload: Value) -> NewJob {
    NewJob::new(&id(kind), &payload).unwrap()
}

fn queue(app: &TestApp, name: &str) -> Queue {
    app.state.queues.get(&id(name))
}

/// Claims every ready job of `q`, in claim order (batches of the most one call takes).
async fn claim_all(q: &Queue) -> Vec<Claimed> {
    let mut all = Vec::new();
    loop {
        let got = q.claim_batch(LEASE, MAX_CLAIM_BATCH).await.unwrap();
        if got.is_empty() {
            return all;
        }
        all.extend(got);
    }
}

/// The keys of a queue that hold jobs: all but the FIFO counter and the wake-up list.
fn job_keys(keys: &[String]) -> Vec<&String> {
    keys.iter()
        .filter(|k| !k.ends_with(":seq") && !k.ends_with(":wake"))
        .collect()
}

/// Sixteen workers race over 3000 jobs, half acking each job and claiming the next in one
/// call (`ack_next`), half claiming batches of 7 and acking a batch while claiming the next
/// (`ack_batch_next`): every job is processed exactly once and the queue ends empty.
#[tokio::test]
async fn claim_next_under_a_race_of_workers_does_every_job_exactly_once() {
    const JOBS: usize = 3000;
    let app = spawn_app_with(no_workers, Clock::Redis).await;
    let q = queue(&app, "race");
    for i in 0..JOBS {
        q.enqueue(
            job("work", json!({"n": i}))
                .id(id(&format!("w{i}")))
                .priority((i % 10) as u8),
        )
        .await
        .unwrap();
    }
    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let done = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..16)
        .map(|w| {
            let (q, seen, done) = (q.clone(), seen.clone(), done.clone());
            tokio::spawn(async move {
                let batch = if w % 2 == 0 { 1 } else { 7 };
                let mut held = q.claim_batch(LEASE, batch).await.unwrap();
                while !held.is_empty() {
                    for c in &held {
                        *seen.lock().unwrap().entry(c.job.id.clone()).or_default() += 1;
                    }
                    done.fetch_add(held.len(), Ordering::SeqCst);
                    held = if batch == 1 {
                        let c = &held[0];
                        q.ack_next(&id(&c.job.id), &c.lease.token, LEASE)
                            .await
                            .unwrap()
                            .into_iter()
                            .collect()
                    } else {
                        let ids: Vec<_> = held.iter().map(|c| id(&c.job.id)).collect();
                        let acks: Vec<_> = ids
                            .iter()
                            .zip(&held)
                            .map(|(i, c)| (i, c.lease.token.as_str()))
                            .collect();
                        q.ack_batch_next(&acks, LEASE, batch).await.unwrap()
                    };
                }
            })
        })
        .collect();
    for w in workers {
        tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("workers finish")
            .unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), JOBS, "every job was processed");
    assert!(
        seen.values().all(|n| *n == 1),
        "no job was processed twice: {:?}",
        seen.iter()
            .filter(|(_, n)| **n > 1)
            .take(5)
            .collect::<Vec<_>>()
    );
    assert_eq!(done.load(Ordering::SeqCst), JOBS);
    assert_eq!(q.counts().await.unwrap(), Default::default());
    // Nothing is left of the jobs.
    let mut c = app.redis_conn().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("q:{race}:*")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(job_keys(&keys).is_empty(), "no job key is left: {keys:?}");
}

/// `ack?next=true` over HTTP acks the job and hands out the next one under a fresh lease, in
/// priority order; when nothing is left it answers 204 and the ack is done.
#[tokio::test]
async fn ack_with_next_hands_out_the_next_job_over_http() {
    let app = manual_app().await;
    for (job_id, p) in [("a", 5), ("b", 0), ("c", 9)] {
        let r = app
            .admin(
                Method::POST,
                "/admin/queues/mail/jobs",
                json!({"id": job_id, "kind": "email", "priority": p}),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
    }
    let first = app
        .call(Method::POST, "/admin/queues/mail/claim", None, true)
        .await;
    assert_eq!(first.body["job"]["id"], "b");
    let mut token = first.body["lease"]["token"].as_str().unwrap().to_owned();
    let mut order = vec!["b".to_string()];
    let mut current = "b".to_string();
    loop {
        let r = app
            .admin(
                Method::POST,
                &format!("/admin/queues/mail/jobs/{current}/ack?next=true&lease_ms=5000"),
                json!({"token": token}),
            )
            .await;
        if r.status == 204 {
            break;
        }
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.body["lease"]["expires_at_ms"], json!(T0 + 5000));
        assert_ne!(
            r.body["lease"]["token"].as_str().unwrap(),
            token,
            "a fresh token"
        );
        current = r.body["job"]["id"].as_str().unwrap().to_owned();
        token = r.body["lease"]["token"].as_str().unwrap().to_owned();
        order.push(current.clone());
    }
    assert_eq!(order, ["b", "a", "c"]);
    let counts = app
        .call(Method::GET, "/admin/queues/mail", None, true)
        .await;
    assert_eq!(
        counts.body,
        json!({"ready": 0, "delayed": 0, "processing": 0, "dead": 0})
    );
}

/// An ack that carries one token no longer valid, with or without a claim of the next job, is
/// 409 `lease_lost` and changes nothing: the valid ack of the same batch is not done and no job
/// is claimed.
#[tokio::test]
async fn an_ack_batch_with_one_lost_lease_acks_and_claims_nothing() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    for i in 0..4 {
        q.enqueue(job("email", json!(i)).id(id(&format!("m{i}"))))
            .await
            .unwrap();
    }
    let held = q.claim_batch(LEASE, 2).await.unwrap();
    assert_eq!(held.len(), 2);
    let (a, b) = (id(&held[0].job.id), id(&held[1].job.id));
    let before = app.dump().await;

    let err = q
        .ack_batch_next(
            &[(&a, held[0].lease.token.as_str()), (&b, "not-the-token")],
            LEASE,
            2,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::LeaseLost);
    assert_eq!(app.dump().await, before, "nothing acked or claimed");

    let err = q
        .ack_next(&b, &held[0].lease.token, LEASE)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::LeaseLost, "a token of another job");
    assert_eq!(app.dump().await, before, "nothing acked or claimed");

    let r = app
        .admin(
            Method::POST,
            &format!("/admin/queues/mail/jobs/{b}/ack?next=true"),
            json!({"token": "nope"}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (409, "lease_lost"));
    assert_eq!(
        app.dump().await,
        before,
        "nothing acked or claimed over HTTP"
    );
}

/// A batched claim leases up to `max` jobs, best first, each under its own token and the same
/// deadline; the tokens are not interchangeable.
#[tokio::test]
async fn a_batched_claim_leases_each_job_under_its_own_token() {
    let app = manual_app().await;
    for (job_id, p) in [("p5", 5), ("p0", 0), ("p9", 9), ("p3", 3), ("p7", 7)] {
        let r = app
            .admin(
                Method::POST,
                "/admin/queues/mail/jobs",
                json!({"id": job_id, "kind": "email", "priority": p}),
            )
            .await;
        assert_eq!(r.status, 201);
    }
    let r = app
        .call(
            Method::POST,
            "/admin/queues/mail/claim?max=3&lease_ms=2000",
            None,
            true,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let claims = r.body["claims"].as_array().unwrap();
    let ids: Vec<&str> = claims
        .iter()
        .map(|c| c["job"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["p0", "p3", "p5"]);
    let tokens: std::collections::HashSet<&str> = claims
        .iter()
        .map(|c| c["lease"]["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens.len(), 3, "one token per job");
    assert!(claims
        .iter()
        .all(|c| c["lease"]["expires_at_ms"] == json!(T0 + 2000)));
    assert!(claims.iter().all(|c| c["job"]["attempts"] == 1));
    let counts = app
        .call(Method::GET, "/admin/queues/mail", None, true)
        .await;
    assert_eq!(
        counts.body,
        json!({"ready": 2, "delayed": 0, "processing": 3, "dead": 0})
    );

    // p0's token does not ack p3.
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/p3/ack",
            json!({"token": claims[0]["lease"]["token"]}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (409, "lease_lost"));

    // Asking for more than is ready gives what is there; nothing ready is 204.
    let r = app
        .call(Method::POST, "/admin/queues/mail/claim?max=100", None, true)
        .await;
    assert_eq!(r.body["claims"].as_array().unwrap().len(), 2);
    let r = app
        .call(Method::POST, "/admin/queues/mail/claim?max=100", None, true)
        .await;
    assert_eq!(r.status, 204);
}

/// A batch size outside 1..=100 is 400 `bad_request` over HTTP and in the library, for claims
/// and for ack-and-claim-next, and `lease_ms` / `max` without `next=true` on an ack are refused
/// too: Redis is unchanged (every key dumped before and after).
#[tokio::test]
async fn batched_claim_bounds_are_refused_and_change_nothing() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    for i in 0..3 {
        q.enqueue(job("email", json!(i)).id(id(&format!("m{i}"))))
            .await
            .unwrap();
    }
    let held = q.claim(LEASE).await.unwrap().unwrap();
    let before = app.dump().await;
    let ack = format!("/admin/queues/mail/jobs/{}/ack", held.job.id);
    let token = json!({"token": held.lease.token});
    let cases: Vec<(String, Option<Value>)> = vec![
        ("/admin/queues/mail/claim?max=0".into(), None),
        (
            format!("/admin/queues/mail/claim?max={}", MAX_CLAIM_BATCH + 1),
            None,
        ),
        ("/admin/queues/mail/claim?max=-1".into(), None),
        ("/admin/queues/mail/claim?max=many".into(), None),
        (
            "/admin/queues/mail/claim?max=5&wait_ms=1000&lease_ms=0".into(),
            None,
        ),
        (format!("{ack}?next=true&max=0"), Some(token.clone())),
        (format!("{ack}?next=true&max=101"), Some(token.clone())),
        (format!("{ack}?next=true&lease_ms=0"), Some(token.clone())),
        (format!("{ack}?next=yes"), Some(token.clone())),
        (format!("{ack}?max=2"), Some(token.clone())),
        (format!("{ack}?lease_ms=1000"), Some(token.clone())),
    ];
    for (path, body) in cases {
        let r = app.call(Method::POST, &path, body, true).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, "bad_request"),
            "{path}: {:?}",
            r.body
        );
        assert_eq!(app.dump().await, before, "{path} changed something");
    }
    for max in [0, MAX_CLAIM_BATCH + 1] {
        let err = q.claim_batch(LEASE, max).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest, "claim_batch max {max}");
        let err = q
            .claim_batch_wait(LEASE, max, Duration::from_millis(10))
            .await
            .unwrap_err();
        assert_eq!(
            err.code,
            ErrorCode::BadRequest,
            "claim_batch_wait max {max}"
        );
    }
    let i = id(&held.job.id);
    let err = q
        .ack_batch_next(
            &[(&i, held.lease.token.as_str())],
            LEASE,
            MAX_CLAIM_BATCH + 1,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest);
    let many: Vec<_> = (0..=MAX_CLAIM_BATCH)
        .map(|_| (&i, held.lease.token.as_str()))
        .collect();
    let err = q.ack_batch_next(&many, LEASE, 0).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest, "more acks than the bound");
    assert_eq!(app.dump().await, before, "the library changed something");
}

/// A bulk enqueue over HTTP adds every job in one call, in order, each where its own fields put
/// it (ready with its priority, or delayed); the library's bulk of 1000 comes out FIFO.
#[tokio::test]
async fn bulk_enqueue_adds_every_job_in_one_call() {
    let app = manual_app().await;
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/bulk",
            json!({"jobs": [
                {"id": "low", "kind": "email", "priority": 9, "payload": {"n": 12345678901234567890u64}},
                {"id": "later", "kind": "email", "delay_ms": 5000},
                {"id": "urgent", "kind": "email", "priority": 0},
                {"kind": "email"},
            ]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let ids = r.body["ids"].as_array().unwrap();
    assert_eq!(&ids[..3], &[json!("low"), json!("later"), json!("urgent")]);
    assert_eq!(ids[3].as_str().unwrap().len(), 32, "a generated id");
    let counts = app
        .call(Method::GET, "/admin/queues/mail", None, true)
        .await;
    assert_eq!(
        counts.body,
        json!({"ready": 3, "delayed": 1, "processing": 0, "dead": 0})
    );
    let q = queue(&app, "mail");
    let order: Vec<String> = q
        .claim_batch(LEASE, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.job.id)
        .collect();
    assert_eq!(&order[..1], ["urgent"]);
    assert_eq!(order[2], "low");

    let q = queue(&app, "fifo");
    let jobs: Vec<_> = (0..1000).map(|i| job("n", json!(i)).priority(3)).collect();
    let placed = q.enqueue_bulk(jobs).await.unwrap();
    assert_eq!(placed.len(), 1000);
    let claimed = claim_all(&q).await;
    assert_eq!(claimed.len(), 1000);
    for (n, c) in claimed.iter().enumerate() {
        assert_eq!(c.job.payload.get(), n.to_string(), "FIFO within a priority");
        assert_eq!(c.job.id, placed[n].0.as_str());
    }
}

/// Single enqueues racing on one queue go to Redis together (group commit), yet each is
/// answered as if alone: 600 tasks enqueue 300 ids, each id raced by two tasks with different
/// payloads. Exactly one of each pair is enqueued, the other gets `conflict`; the stored body
/// is the winner's; and Redis ran far fewer enqueue scripts than there were enqueues.
#[tokio::test]
async fn racing_single_enqueues_share_script_calls_and_each_is_answered_alone() {
    const IDS: usize = 300;
    let app = manual_app().await;
    let q = queue(&app, "race");
    let calls_before = app.redis_command_calls("evalsha").await;
    let tasks: Vec<_> = (0..2 * IDS)
        .map(|i| {
            let q = q.clone();
            tokio::spawn(async move {
                let n = i % IDS;
                let r = q
                    .enqueue(job("race", json!({"n": n, "by": i})).id(id(&format!("j{n}"))))
                    .await;
                (n, i, r)
            })
        })
        .collect();
    let mut winner: HashMap<usize, usize> = HashMap::new();
    let mut conflicts = 0;
    for t in tasks {
        let (n, i, r) = t.await.unwrap();
        match r {
            Ok(got) => {
                assert_eq!(got.as_str(), format!("j{n}"));
                assert!(winner.insert(n, i).is_none(), "j{n} enqueued twice");
            }
            Err(e) => {
                assert_eq!(e.code, ErrorCode::Conflict, "{e:?}");
                assert!(e.message.contains(&format!("j{n} ")), "{}", e.message);
                conflicts += 1;
            }
        }
    }
    assert_eq!(winner.len(), IDS, "every id enqueued once");
    assert_eq!(conflicts, IDS);
    let calls = app.redis_command_calls("evalsha").await - calls_before;
    assert!(
        calls < (2 * IDS / 4) as u64,
        "{calls} script calls for {} enqueues: they were not grouped",
        2 * IDS
    );
    let claimed = claim_all(&q).await;
    for c in &claimed {
        let body: Value = serde_json::from_str(c.job.payload.get()).unwrap();
        let n = body["n"].as_u64().unwrap() as usize;
        assert_eq!(c.job.id, format!("j{n}"));
        assert_eq!(
            body["by"].as_u64().unwrap() as usize,
            winner[&n],
            "the winner's body"
        );
    }
    assert_eq!(claimed.len(), IDS);
}

/// The jobs of each enqueue script call, from Redis's slow log (every command logged): the
/// script gets 8 keys, the clock, the each-on-its-own flag and 6 arguments per job, and the log
/// keeps a long command's argument count in its last entry ("... (N more arguments)").
async fn enqueue_calls_logged(app: &TestApp, queue: &str) -> Vec<usize> {
    let ready = format!("q:{{{queue}}}:ready");
    let mut calls = Vec::new();
    for args in app.slow_log().await {
        if !args[0].eq_ignore_ascii_case("evalsha") || args.get(3) != Some(&ready) {
            continue;
        }
        let argc = match args[31..].first().and_then(|a| a.strip_prefix("... (")) {
            Some(more) => 31 + more.split(' ').next().unwrap().parse::<usize>().unwrap(),
            None => args.len(),
        };
        assert_eq!((argc - 13) % 6, 0, "an enqueue call of {argc} arguments");
        calls.push((argc - 13) / 6);
    }
    calls
}

/// The group commit of single enqueues keeps each script call within a bulk enqueue's bounds:
/// 40 enqueues of about 100 000 bytes each, raced on one queue, reach Redis in calls of at most
/// 10 jobs (1 MiB), and 2 500 small ones in calls of at most 1 000; every job is enqueued once.
/// Redis's slow log, set to log every command, shows each call's arguments.
#[tokio::test]
async fn racing_single_enqueues_are_split_at_a_bulk_enqueues_bounds() {
    let app = manual_app().await;
    // Redis knows the script from here on: no call is logged twice (once refused `NOSCRIPT`).
    queue(&app, "warm")
        .enqueue(job("warm", json!(0)))
        .await
        .unwrap();
    for (name, n, pad) in [("big", 40, 100_000), ("many", 2_500, 0)] {
        let q = queue(&app, name);
        app.log_every_command(true).await;
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let q = q.clone();
                let pad = "x".repeat(pad);
                tokio::spawn(async move { q.enqueue(job(name, json!({"i": i, "pad": pad}))).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().expect("enqueued");
        }
        app.log_every_command(false).await;
        let calls = enqueue_calls_logged(&app, name).await;
        assert_eq!(
            calls.iter().sum::<usize>(),
            n,
            "{name}: every job in one call: {calls:?}"
        );
        let most = MAX_BULK_BYTES.checked_div(pad).unwrap_or(MAX_BULK_JOBS);
        assert!(
            calls.iter().all(|&jobs| jobs <= most),
            "{name}: a call above {most} jobs: {calls:?}"
        );
        assert!(
            calls.iter().any(|&jobs| jobs > 1),
            "{name}: nothing grouped: {calls:?}"
        );
        assert_eq!(q.counts().await.unwrap().ready, n as u64, "{name}");
    }
}

/// An enqueue answered `unavailable` may or may not have been applied; enqueuing again with the
/// same id settles it (docs/queues.md): 40 single enqueues sent together while Redis is paused
/// (SIGSTOP) are all answered `unavailable`; once it resumes, each is retried with its id until
/// answered — enqueued, or `conflict` when the first attempt had reached Redis and ran on
/// resume — and the queue then holds each job exactly once, with its body.
#[tokio::test]
async fn an_unavailable_enqueue_is_settled_by_enqueuing_the_same_id_again() {
    const JOBS: usize = 40;
    let app = manual_app().await;
    let q = queue(&app, "stall");
    let enqueue = |n: usize| {
        let q = q.clone();
        async move {
            q.enqueue(job("stall", json!({"n": n})).id(id(&format!("s{n}"))))
                .await
        }
    };
    let resume = app.redis.pause();
    let answers = futures_util::future::join_all((0..JOBS).map(enqueue)).await;
    for r in &answers {
        let e = r.as_ref().expect_err("answered while Redis was stopped");
        assert_eq!(e.code, ErrorCode::Unavailable, "{e:?}");
    }
    drop(resume);
    let mut conflicts = 0;
    for n in 0..JOBS {
        match enqueue(n).await {
            Ok(got) => assert_eq!(got.as_str(), format!("s{n}")),
            Err(e) if e.code == ErrorCode::Conflict => conflicts += 1,
            Err(e) => panic!("retry of s{n}: {e:?}"),
        }
    }
    println!("{conflicts} of {JOBS} retries found their job already enqueued");
    let mut seen = std::collections::HashSet::new();
    for c in claim_all(&q).await {
        let body: Value = serde_json::from_str(c.job.payload.get()).unwrap();
        assert_eq!(c.job.id, format!("s{}", body["n"]));
        assert!(seen.insert(c.job.id.clone()), "{} twice", c.job.id);
    }
    assert_eq!(seen.len(), JOBS, "every job once");
}

/// Bulk enqueue refusals: an empty list, more than 1000 jobs, one bad job (named by its place),
/// an id twice in the list, an unknown field, a body over 64 KiB — 400 (413 for the size) — and
/// one id already in the queue — 409 `conflict` — each leave Redis exactly as it was, the valid
/// jobs of the same call included. The library refuses more than 1 MiB of bodies the same way.
#[tokio::test]
async fn bulk_enqueue_refusals_change_nothing() {
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
    let tiny: Vec<Value> = (0..1001).map(|_| json!({"kind": "k"})).collect();
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (json!({"jobs": []}), 400, "bad_request", "1..=1000"),
        (json!({"jobs": tiny}), 400, "bad_request", "1..=1000"),
        (
            json!({"jobs": [{"id": "a", "kind": "k"}, {"id": "b", "kind": "k"}, {"id": "c", "kind": "k", "priority": 10}]}),
            400,
            "bad_request",
            "jobs[2]",
        ),
        (
            json!({"jobs": [{"id": "a", "kind": "k"}, {"id": "b", "kind": "bad:kind"}]}),
            400,
            "invalid_id",
            "jobs[1]",
        ),
        (
            json!({"jobs": [{"id": "a", "kind": "k"}, {"id": "a", "kind": "k"}]}),
            400,
            "bad_request",
            "twice",
        ),
        (
            json!({"jobs": [{"kind": "k"}, {"kind": "k", "colour": 1}]}),
            400,
            "bad_request",
            "jobs[1]: unknown field",
        ),
        (
            json!({"jobs": [{"kind": "k", "priority": "5"}]}),
            400,
            "bad_request",
            "jobs[0]: invalid type",
        ),
        (
            json!({"jobs": [{"id": "a", "kind": "k"}], "extra": 1}),
            400,
            "bad_request",
            "",
        ),
        (
            json!({"jobs": [{"id": "a", "kind": "k"}, {"id": "exists", "kind": "k"}]}),
            409,
            "conflict",
            "exists",
        ),
        (
            json!({"jobs": [{"kind": "k", "payload": "x".repeat(70_000)}]}),
            413,
            "payload_too_large",
            "",
        ),
    ];
    for (body, status, code, says) in cases {
        let r = app
            .admin(Method::POST, "/admin/queues/mail/jobs/bulk", body)
            .await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{:?}",
            r.body
        );
        let message = r.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{message:?} names {says:?}");
        assert_eq!(
            app.dump().await,
            before,
            "a refused bulk ({code}) changed something"
        );
    }
    let q = queue(&app, "mail");
    let big = "y".repeat(200_000);
    let jobs: Vec<_> = (0..6).map(|_| job("k", json!(big))).collect();
    let err = q.enqueue_bulk(jobs).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest, "{}", err.message);
    let err = q.enqueue_bulk(Vec::new()).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::BadRequest);
    let err = q
        .enqueue_bulk(vec![
            job("k", json!(1)).id(id("fresh")),
            job("k", json!(2)).id(id("exists")),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert_eq!(app.dump().await, before, "the library changed something");
}

/// Every failed attempt is kept with the job — its number, its lease's first 8 characters, the
/// time, the nack's reason or `lease lapsed` — the last ten only, and shown with the dead
/// letter: 11 nacks then a lapsed lease leave attempts 3..=12.
#[tokio::test]
async fn the_attempt_history_is_kept_bounded_and_shown_when_dead() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    q.enqueue(job("email", json!({})).id(id("flaky")).max_attempts(12))
        .await
        .unwrap();
    let mut leases = Vec::new();
    for i in 1..=11 {
        let c = q.claim(LEASE).await.unwrap().unwrap();
        leases.push(c.lease.token.clone());
        let r = app
            .admin(
                Method::POST,
                "/admin/queues/mail/jobs/flaky/nack",
                json!({"token": c.lease.token, "delay_ms": 0, "reason": format!("smtp said no ({i})")}),
            )
            .await;
        assert_eq!(r.status, 204, "{:?}", r.body);
        app.clock.advance(10);
    }
    let c = q.claim(Duration::from_millis(1000)).await.unwrap().unwrap();
    leases.push(c.lease.token.clone());
    app.clock.advance(1000);
    let lapsed_at = T0 + 11 * 10 + 1000;
    assert_eq!(q.reap().await.unwrap().dead, 1);

    let r = app
        .call(Method::GET, "/admin/queues/mail/dead", None, true)
        .await;
    assert_eq!(r.status, 200);
    let dead = &r.body["jobs"][0];
    assert_eq!(dead["id"], "flaky");
    assert_eq!(dead["attempts"], 12);
    let history = dead["history"].as_array().unwrap();
    assert_eq!(history.len(), 10, "the last ten attempts: {history:?}");
    for (k, h) in history.iter().enumerate() {
        let attempt = k + 3;
        assert_eq!(h["attempt"], attempt);
        assert_eq!(h["lease"], json!(&leases[attempt - 1][..8]));
        if attempt <= 11 {
            assert_eq!(h["reason"], json!(format!("smtp said no ({attempt})")));
            assert_eq!(h["at_ms"], json!(T0 + (attempt as i64 - 1) * 10));
        } else {
            assert_eq!(h["reason"], "lease lapsed");
            assert_eq!(h["at_ms"], json!(lapsed_at));
        }
    }
    // The library shows the same.
    let (_, dead) = q.dead(0, 10).await.unwrap();
    assert_eq!(dead[0].history.len(), 10);
    assert_eq!(dead[0].history[9].reason.as_deref(), Some("lease lapsed"));
}

/// A nack without a reason is recorded without one; a reason over 500 characters is 400 and
/// changes nothing (the lease still holds, no history entry).
#[tokio::test]
async fn a_nack_reason_over_the_bound_is_refused_and_changes_nothing() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    q.enqueue(job("email", json!({})).id(id("m1")).max_attempts(1))
        .await
        .unwrap();
    let c = q.claim(LEASE).await.unwrap().unwrap();
    let before = app.dump().await;
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/m1/nack",
            json!({"token": c.lease.token, "reason": "é".repeat(501)}),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (400, "bad_request"),
        "{:?}",
        r.body
    );
    assert_eq!(app.dump().await, before, "a refused nack changed something");
    let r = app
        .admin(
            Method::POST,
            "/admin/queues/mail/jobs/m1/nack",
            json!({"token": c.lease.token, "reason": "é".repeat(500)}),
        )
        .await;
    assert_eq!(r.status, 204, "500 characters are fine: {:?}", r.body);
    let (_, dead) = q.dead(0, 10).await.unwrap();
    assert_eq!(dead[0].history[0].reason, Some("é".repeat(500)));
}

/// The history goes with its job: a dead letter with history retried, claimed and acked leaves
/// no field in the state hash and no key but the FIFO counter and wake-ups; the same id enqueued again starts
/// with no history.
#[tokio::test]
async fn the_history_is_deleted_with_the_job() {
    let app = manual_app().await;
    let q = queue(&app, "mail");
    let mut c = app.redis_conn().await;
    q.enqueue(job("email", json!({})).id(id("m1")).max_attempts(2))
        .await
        .unwrap();
    for _ in 0..2 {
        let h = q.claim(LEASE).await.unwrap().unwrap();
        q.nack_because(
            &id("m1"),
            &h.lease.token,
            Some(Duration::ZERO),
            Some("nope"),
        )
        .await
        .unwrap();
    }
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg("q:{mail}:state")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(fields.contains(&"m1:h".to_string()), "{fields:?}");
    q.retry(&id("m1")).await.unwrap();
    let h = q.claim(LEASE).await.unwrap().unwrap();
    q.ack(&id("m1"), &h.lease.token).await.unwrap();

    let state: i64 = redis::cmd("HLEN")
        .arg("q:{mail}:state")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(state, 0, "no field of the job is left");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("q:{mail}:*")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        job_keys(&keys).is_empty(),
        "no key of the job is left: {keys:?}"
    );

    q.enqueue(job("email", json!({})).id(id("m1")).max_attempts(1))
        .await
        .unwrap();
    let h = q.claim(LEASE).await.unwrap().unwrap();
    q.nack(&id("m1"), &h.lease.token, None).await.unwrap();
    let (_, dead) = q.dead(0, 10).await.unwrap();
    assert_eq!(
        dead[0].history.len(),
        1,
        "a fresh job starts a fresh history"
    );
    assert_eq!(dead[0].history[0].reason, None);
}
