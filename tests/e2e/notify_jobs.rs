//! `notify` jobs are at-least-once across instances: the job is acked only once the hub has
//! published the notification for the other instances, so a publish that fails leaves the job
//! to be retried instead of silently dropping the notification.

use std::time::Duration;

use futures_util::StreamExt;
use scorecast_server::clock::Clock;
use scorecast_server::jobs::{self, NotifyPayload};
use scorecast_server::queue::NewJob;
use scorecast_shared::Id;
use scorecast_tests::spawn_app_with;
use serde_json::{json, Value};

/// Grants or denies PUBLISH to the connections of Redis's default user (the server's).
async fn allow_publish(conn: &mut redis::aio::MultiplexedConnection, allow: bool) {
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg(if allow { "+publish" } else { "-publish" })
        .query_async::<()>(conn)
        .await
        .expect("ACL SETUSER");
}

#[tokio::test]
async fn a_notify_job_whose_publish_fails_is_retried_not_acked() {
    // Arrange: a notify job for alice, and a listener on her channel (another instance).
    let clock = Clock::manual(1_741_608_000_000);
    let app = spawn_app_with(|s| s.workers = false, clock.clone()).await;
    let q = jobs::queue(&app.state);
    let payload = NotifyPayload {
        player: "alice".into(),
        kind: "reward".into(),
        payload: json!({"rank": 1}),
    };
    let kind = Id::parse(jobs::KIND_NOTIFY).expect("a valid id");
    q.enqueue(NewJob::new(&kind, &payload).expect("a job"))
        .await
        .expect("enqueue");
    let client = redis::Client::open(app.redis.url()).expect("redis url");
    let mut listener = client.get_async_pubsub().await.expect("pub/sub connection");
    listener
        .subscribe("notify:{alice}")
        .await
        .expect("SUBSCRIBE");
    let mut admin = app.redis_conn().await;

    // Act: run the job while Redis refuses PUBLISH.
    allow_publish(&mut admin, false).await;
    let (job, ok) = jobs::run_next(&app.state, &app.state.hub)
        .await
        .expect("settling works without PUBLISH")
        .expect("the job was ready");

    // Assert: failed and backing off, not acked and not dead.
    assert_eq!(job.kind, jobs::KIND_NOTIFY);
    assert!(!ok, "a failed publish fails the job");
    let c = q.counts().await.expect("counts");
    assert_eq!(
        (c.ready, c.delayed, c.processing, c.dead),
        (0, 1, 0, 0),
        "the job waits for its retry"
    );

    // Act: publishing works again and the retry is due.
    allow_publish(&mut admin, true).await;
    clock.advance(3_600_000);
    q.promote_due().await.expect("promote");
    let (retried, ok) = jobs::run_next(&app.state, &app.state.hub)
        .await
        .expect("run")
        .expect("the retry was ready");

    // Assert: the retry succeeded, the queue is empty, and the other instance got the message.
    assert_eq!(retried.id, job.id);
    assert!(retried.attempts > job.attempts, "a second attempt");
    assert!(ok);
    let c = q.counts().await.expect("counts");
    assert_eq!((c.ready, c.delayed, c.processing, c.dead), (0, 0, 0, 0));
    let msg = tokio::time::timeout(Duration::from_secs(10), listener.on_message().next())
        .await
        .expect("the notification was published")
        .expect("a message");
    let body: Value = serde_json::from_slice(msg.get_payload_bytes()).expect("JSON");
    assert_eq!(
        (body["kind"].as_str(), &body["payload"]),
        (Some("reward"), &json!({"rank": 1}))
    );
}
