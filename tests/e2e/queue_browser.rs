//! The queue browser's endpoints (`docs/queues.md`, "HTTP API"): jobs listed by state with their
//! payloads and times, paged; one job deleted; every dead letter retried; one state purged; and
//! bad input refused with its code and every Redis key unchanged. Every test has its own
//! redis-server.

use reqwest::Method;
use scorecast_server::clock::Clock;
use scorecast_server::queue::NewJob;
use scorecast_tests::{id, spawn_app_with, TestApp, ADMIN_TOKEN};
use serde_json::{json, Value};

/// 2025-03-10T12:00:00Z, a fixed start for the manual clock.
const T0: i64 = 1_741_608_000_000;
const B: &str = "/admin/queues/mail";

/// A server without background tasks on a manual clock: every step is explicit.
async fn manual_app() -> TestApp {
    spawn_app_with(|s| s.workers = false, Clock::manual(T0)).await
}

async fn enqueue(app: &TestApp, body: Value) {
    let r = app
        .admin(Method::POST, &format!("{B}/jobs"), body.clone())
        .await;
    assert_eq!(r.status, 201, "enqueue {body}: {:?}", r.body);
}

/// Claims the best ready job over HTTP; its id and lease token.
async fn claim(app: &TestApp) -> (String, String) {
    let r = app
        .admin(
            Method::POST,
            &format!("{B}/claim?lease_ms=30000"),
            json!(null),
        )
        .await;
    assert_eq!(r.status, 200, "claim: {:?}", r.body);
    (
        r.body["job"]["id"].as_str().unwrap().to_owned(),
        r.body["lease"]["token"].as_str().unwrap().to_owned(),
    )
}

async fn nack(app: &TestApp, job: &str, token: &str, reason: &str) {
    let r = app
        .admin(
            Method::POST,
            &format!("{B}/jobs/{job}/nack"),
            json!({"token": token, "reason": reason}),
        )
        .await;
    assert_eq!(r.status, 204, "nack {job}: {:?}", r.body);
}

/// `GET …/jobs?state=…` (plus `extra` query text); panics unless 200.
async fn list(app: &TestApp, state: &str, extra: &str) -> Value {
    let r = app
        .admin(
            Method::GET,
            &format!("{B}/jobs?state={state}{extra}"),
            json!(null),
        )
        .await;
    assert_eq!(r.status, 200, "list {state}{extra}: {:?}", r.body);
    r.body
}

fn ids(page: &Value) -> Vec<String> {
    page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn counts(app: &TestApp) -> Value {
    app.admin(Method::GET, B, json!(null)).await.body
}

/// One queue with a job in every state: `dies` (dead, nacked with a reason), `held`
/// (processing), `n2`, `n5a`, `n5b` (ready: priorities 2, 5, 5) and `sooner`, `later`
/// (delayed 1 s and 60 s).
async fn every_state(app: &TestApp) {
    enqueue(
        app,
        json!({"id": "dies", "kind": "email", "payload": {"to": "x"}, "priority": 0, "max_attempts": 1}),
    )
    .await;
    enqueue(app, json!({"id": "held", "kind": "email", "priority": 1})).await;
    let (job, token) = claim(app).await;
    assert_eq!(job, "dies");
    nack(app, &job, &token, "smtp timeout").await;
    assert_eq!(claim(app).await.0, "held");
    enqueue(
        app,
        json!({"id": "n5a", "kind": "email", "payload": {"big": 12345678901234567890u64, "tags": []}, "priority": 5}),
    )
    .await;
    enqueue(app, json!({"id": "n2", "kind": "email", "priority": 2})).await;
    enqueue(app, json!({"id": "n5b", "kind": "email", "priority": 5})).await;
    enqueue(
        app,
        json!({"id": "later", "kind": "email", "delay_ms": 60000}),
    )
    .await;
    enqueue(
        app,
        json!({"id": "sooner", "kind": "email", "delay_ms": 1000}),
    )
    .await;
}

/// Each state lists its jobs in its order with payload, priority, attempts and its time: ready
/// by priority then FIFO, delayed by due time (`run_at_ms`), processing with its lease deadline
/// and attempts, dead with its time of death, failure reason and attempt history; the payload
/// comes back byte for byte.
#[tokio::test]
async fn each_state_lists_its_jobs_in_order_with_payloads_and_times() {
    let app = manual_app().await;
    every_state(&app).await;

    let ready = list(&app, "ready", "").await;
    assert_eq!(ready["state"], "ready");
    assert_eq!(ready["total"], 3);
    assert_eq!(ids(&ready), ["n2", "n5a", "n5b"]);
    assert_eq!(ready["jobs"][1]["priority"], 5);
    assert_eq!(ready["jobs"][1]["attempts"], 0);
    assert_eq!(ready["jobs"][1]["max_attempts"], 5);
    assert!(ready["jobs"][1].get("run_at_ms").is_none());

    let delayed = list(&app, "delayed", "").await;
    assert_eq!(ids(&delayed), ["sooner", "later"]);
    assert_eq!(delayed["jobs"][0]["run_at_ms"], T0 + 1000);
    assert_eq!(delayed["jobs"][1]["run_at_ms"], T0 + 60000);

    let processing = list(&app, "processing", "").await;
    assert_eq!(ids(&processing), ["held"]);
    assert_eq!(processing["jobs"][0]["lease_expires_at_ms"], T0 + 30000);
    assert_eq!(processing["jobs"][0]["attempts"], 1);

    let dead = list(&app, "dead", "").await;
    assert_eq!(ids(&dead), ["dies"]);
    let d = &dead["jobs"][0];
    assert_eq!(d["died_at_ms"], T0);
    assert_eq!(d["payload"], json!({"to": "x"}));
    assert_eq!(d["attempts"], 1);
    let history = d["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["attempt"], 1);
    assert_eq!(history[0]["reason"], "smtp timeout");
    assert_eq!(history[0]["at_ms"], T0);
    assert_eq!(history[0]["lease"].as_str().unwrap().len(), 8);

    // The payload's big integer and empty array, byte for byte in the raw answer.
    let raw = reqwest::Client::new()
        .get(app.url(&format!("{B}/jobs?state=ready")))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        raw.contains(r#""payload":{"big":12345678901234567890,"tags":[]}"#),
        "{raw}"
    );

    // The list of queues shows the same counts.
    let all = app.admin(Method::GET, "/admin/queues", json!(null)).await;
    assert_eq!(
        all.body["queues"],
        json!([{"name": "mail", "ready": 3, "delayed": 2, "processing": 1, "dead": 1}])
    );
}

/// Pages of 10 over 25 ready jobs walk them in order without a gap or a repeat, each page
/// saying the total; a page past the end is empty.
#[tokio::test]
async fn paging_walks_a_state_without_gaps_or_repeats() {
    let app = manual_app().await;
    let q = app.state.queues.get(&id("mail"));
    let jobs = (0..25)
        .map(|i| {
            NewJob::new(&id("k"), &json!({ "i": i }))
                .unwrap()
                .id(id(&format!("j{i:02}")))
        })
        .collect();
    q.enqueue_bulk(jobs).await.unwrap();
    let mut seen = Vec::new();
    for offset in [0, 10, 20] {
        let page = list(&app, "ready", &format!("&limit=10&offset={offset}")).await;
        assert_eq!(page["total"], 25);
        seen.extend(ids(&page));
    }
    let want: Vec<String> = (0..25).map(|i| format!("j{i:02}")).collect();
    assert_eq!(seen, want);
    let past = list(&app, "ready", "&limit=10&offset=30").await;
    assert_eq!((past["total"].clone(), ids(&past).len()), (json!(25), 0));
}

/// Deleting a ready, a delayed and a dead job removes it and every trace of it (no body, no
/// state fields), and its id can be used again; a job being processed is refused with
/// `409 conflict` and stays as it was.
#[tokio::test]
async fn delete_removes_a_job_and_every_trace_of_it() {
    let app = manual_app().await;
    every_state(&app).await;
    for job in ["n5a", "sooner", "dies"] {
        let r = app
            .admin(Method::DELETE, &format!("{B}/jobs/{job}"), json!(null))
            .await;
        assert_eq!(r.status, 204, "delete {job}: {:?}", r.body);
    }
    assert_eq!(
        counts(&app).await,
        json!({"ready": 2, "delayed": 1, "processing": 1, "dead": 0})
    );
    let dump = app.dump().await;
    let mut c = app.redis_conn().await;
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg("q:{mail}:state")
        .query_async(&mut c)
        .await
        .unwrap();
    let bodies: Vec<String> = redis::cmd("HKEYS")
        .arg("q:{mail}:jobs")
        .query_async(&mut c)
        .await
        .unwrap();
    for job in ["n5a", "sooner", "dies"] {
        assert!(
            !fields.iter().any(|f| f.starts_with(&format!("{job}:"))),
            "{job} left state fields: {fields:?}"
        );
        assert!(!bodies.contains(&job.to_owned()), "{job} left its body");
    }

    // Processing: refused, nothing changed.
    let r = app
        .admin(Method::DELETE, &format!("{B}/jobs/held"), json!(null))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (409, "conflict"));
    assert_eq!(app.dump().await, dump, "a refused delete changed nothing");

    // The id is free again.
    enqueue(&app, json!({"id": "dies", "kind": "email"})).await;
}

/// Retrying every dead letter brings each back to ready with fresh attempts and its history
/// kept; a claimer then gets them.
#[tokio::test]
async fn retry_all_brings_every_dead_letter_back_with_fresh_attempts() {
    let app = manual_app().await;
    for i in 0..3 {
        enqueue(
            &app,
            json!({"id": format!("d{i}"), "kind": "email", "max_attempts": 1}),
        )
        .await;
    }
    for _ in 0..3 {
        let (job, token) = claim(&app).await;
        nack(&app, &job, &token, "boom").await;
    }
    assert_eq!(list(&app, "dead", "").await["total"], 3);
    let r = app
        .admin(Method::POST, &format!("{B}/dead/retry"), json!(null))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body, json!({"done": 3, "left": 0}));
    assert_eq!(
        counts(&app).await,
        json!({"ready": 3, "delayed": 0, "processing": 0, "dead": 0})
    );
    let ready = list(&app, "ready", "").await;
    assert_eq!(ids(&ready), ["d0", "d1", "d2"], "the longest dead first");
    for j in ready["jobs"].as_array().unwrap() {
        assert_eq!(j["attempts"], 0, "{j}");
        assert_eq!(j["history"][0]["reason"], "boom", "{j}");
    }
    assert_eq!(claim(&app).await.0, "d0");
}

/// Purging a state deletes its jobs (bodies and state fields too) and leaves the other states
/// as they were; purging `processing` is refused with `400 bad_request` and changes nothing.
#[tokio::test]
async fn purge_deletes_one_state_and_leaves_the_others() {
    let app = manual_app().await;
    every_state(&app).await;
    let purge = |state: &'static str| {
        let app = &app;
        async move {
            app.admin(
                Method::POST,
                &format!("{B}/purge?state={state}"),
                json!(null),
            )
            .await
        }
    };
    let r = purge("dead").await;
    assert_eq!(
        (r.status.as_u16(), r.body.clone()),
        (200, json!({"done": 1, "left": 0}))
    );
    assert_eq!(
        counts(&app).await,
        json!({"ready": 3, "delayed": 2, "processing": 1, "dead": 0})
    );
    let r = purge("ready").await;
    assert_eq!(r.body, json!({"done": 3, "left": 0}));
    let r = purge("delayed").await;
    assert_eq!(r.body, json!({"done": 2, "left": 0}));
    assert_eq!(
        counts(&app).await,
        json!({"ready": 0, "delayed": 0, "processing": 1, "dead": 0})
    );
    let mut c = app.redis_conn().await;
    let bodies: Vec<String> = redis::cmd("HKEYS")
        .arg("q:{mail}:jobs")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(bodies, ["held"], "only the processing job's body is left");
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg("q:{mail}:state")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(fields.iter().all(|f| f.starts_with("held:")), "{fields:?}");

    let before = app.dump().await;
    let r = purge("processing").await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "bad_request"));
    assert_eq!(app.dump().await, before, "a refused purge changed nothing");
}

/// Purge and retry-all go at most 1000 jobs per call and say how many are left, so a large
/// state never holds Redis for long: 1005 jobs take two calls.
#[tokio::test]
async fn purge_and_retry_all_go_in_bounded_steps() {
    let app = manual_app().await;
    let q = app.state.queues.get(&id("mail"));
    for chunk in 0..2 {
        let jobs = (0..if chunk == 0 { 1000 } else { 5 })
            .map(|i| {
                NewJob::new(&id("k"), &json!(null))
                    .unwrap()
                    .id(id(&format!("c{chunk}-{i}")))
            })
            .collect();
        q.enqueue_bulk(jobs).await.unwrap();
    }
    let r = app
        .admin(Method::POST, &format!("{B}/purge?state=ready"), json!(null))
        .await;
    assert_eq!(r.body, json!({"done": 1000, "left": 5}));
    let r = app
        .admin(Method::POST, &format!("{B}/purge?state=ready"), json!(null))
        .await;
    assert_eq!(r.body, json!({"done": 5, "left": 0}));
    let r = app
        .admin(Method::POST, &format!("{B}/dead/retry"), json!(null))
        .await;
    assert_eq!(r.body, json!({"done": 0, "left": 0}), "nothing dead");
}

/// Bad input answers its code and changes no Redis key: an unknown or missing state, paging
/// out of bounds or not a number, an unknown query field, an unknown queue, an unknown job, a
/// malformed queue name, purging `processing`, deleting a job being processed.
#[tokio::test]
async fn bad_input_answers_its_code_and_changes_nothing() {
    let app = manual_app().await;
    every_state(&app).await;
    let cases: [(Method, String, u16, &str); 17] = [
        (
            Method::GET,
            format!("{B}/jobs?state=bogus"),
            400,
            "bad_request",
        ),
        (Method::GET, format!("{B}/jobs"), 400, "bad_request"),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&limit=0"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&limit=1001"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&limit=ten"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&offset=-1"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&offset=4294967296"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            format!("{B}/jobs?state=ready&page=2"),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/admin/queues/ghost/jobs?state=ready".into(),
            404,
            "not_found",
        ),
        (
            Method::GET,
            "/admin/queues/bad:q/jobs?state=ready".into(),
            400,
            "invalid_id",
        ),
        (
            Method::POST,
            "/admin/queues/ghost/purge?state=dead".into(),
            404,
            "not_found",
        ),
        (
            Method::POST,
            "/admin/queues/ghost/dead/retry".into(),
            404,
            "not_found",
        ),
        (
            Method::POST,
            format!("{B}/purge?state=processing"),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            format!("{B}/purge?state=bogus"),
            400,
            "bad_request",
        ),
        (Method::DELETE, format!("{B}/jobs/nope"), 404, "not_found"),
        (Method::DELETE, format!("{B}/jobs/held"), 409, "conflict"),
        (
            Method::POST,
            format!("{B}/dead/nope/retry"),
            404,
            "not_found",
        ),
    ];
    for (method, path, status, code) in cases {
        let before = app.dump().await;
        let r = app.admin(method.clone(), &path, json!(null)).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (status, code),
            "{method} {path}: {:?}",
            r.body
        );
        assert_eq!(app.dump().await, before, "{method} {path} changed nothing");
    }
}

/// A delete, a purge and a retry of every dead letter are each in the admin audit log, with
/// the queue, what was touched and the key that did it (the admin token: `admin`).
#[tokio::test]
async fn deletes_purges_and_retries_are_audited() {
    let app = manual_app().await;
    every_state(&app).await;
    for (method, path) in [
        (Method::DELETE, format!("{B}/jobs/n2")),
        (Method::POST, format!("{B}/dead/retry")),
        (Method::POST, format!("{B}/purge?state=delayed")),
    ] {
        let r = app.admin(method, &path, json!(null)).await;
        assert!(r.status.is_success(), "{path}: {:?}", r.body);
    }
    let r = app
        .admin(Method::GET, "/admin/audit?limit=10", json!(null))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let seen: Vec<Value> = r.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            json!([
                e["action"],
                e["by"],
                e["queue"],
                e["job"],
                e["state"],
                e["jobs"]
            ])
        })
        .collect();
    assert_eq!(
        seen,
        [
            json!(["queue_purge", "admin", "mail", null, "delayed", "2"]),
            json!(["dead_letter_retry_all", "admin", "mail", null, null, "1"]),
            json!(["job_delete", "admin", "mail", "n2", "ready", null]),
        ]
    );
}
