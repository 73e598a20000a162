//! A burst of vendor events survives a killed worker: every event on the log (what the webhook
//! route answered 2xx for) ends recorded once and no session settles twice. The real callbacks
//! stage consumes a topic of its own (as many partitions as `callbacks.events`); each session
//! gets a completed event, a failed event and a second delivery of its first event (same vendor
//! event id, another message), interleaved with the other sessions'; the worker is killed
//! (SIGKILL) mid-burst with none of its offsets committed, and its successor gets every message
//! again. A second test applies one partition's events as one batch, in order, with an event
//! that can never apply among them.

use std::time::{Duration, Instant};

use pipeline::{CallbacksStage, StageHandler};
use serde_json::json;
use sqlx::PgPool;
use topics::callbacks::{Event, EventStatus};
use topics::{Envelope, Message, Principal, Topic};
use uuid::Uuid;

use crate::support::{WorkerProcess, consumer, database, dead_lettered, produce_keyed, producer};

const SESSIONS: usize = 300;
const APP: &str = "burst-vendor";

/// Runs as a child process of `a_burst_of_events_survives_a_killed_worker`.
#[tokio::test]
#[ignore = "started as a child process by the callback burst test"]
async fn callback_worker_process() {
    WorkerProcess::serve(StageHandler::new(CallbacksStage, database().await, None)).await;
}

fn spawn_worker(topic: &str, group: &str) -> WorkerProcess {
    WorkerProcess::start("callback_burst::callback_worker_process", topic, group)
}

#[tokio::test]
async fn a_burst_of_events_survives_a_killed_worker() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let sessions = open_sessions(&pool, tenant, SESSIONS).await;
    // Even sessions hear "completed" first, odd ones "failed": the first wins.
    let event = |session: Uuid, n: usize, status| {
        Envelope::new(
            Some(tenant),
            Principal::system("vendor-webhook"),
            "req-burst",
            None,
            Event {
                session_id: session,
                app_name: APP.into(),
                external_id: format!("ext-{session}"),
                event_id: format!("evt-{session}-{n}"),
                status,
                output: Some(json!({"verified": status == EventStatus::Completed})),
                error: (status == EventStatus::Failed).then(|| "declined".to_owned()),
            },
        )
    };
    let mut burst = Vec::new();
    for round in 0..3 {
        for (i, session) in sessions.iter().enumerate() {
            let (first, second) = if i % 2 == 0 {
                (EventStatus::Completed, EventStatus::Failed)
            } else {
                (EventStatus::Failed, EventStatus::Completed)
            };
            burst.push(match round {
                0 => event(*session, 0, first),
                1 => event(*session, 1, second),
                // The vendor delivers its first event again: another message, the same id.
                _ => event(*session, 0, first),
            });
        }
    }
    let topic = fresh_callbacks_topic().await;
    let producer = producer("burst-test");
    for envelope in &burst {
        produce_keyed(&producer, &topic, envelope).await;
    }

    let group = format!("callback-burst-{}", Uuid::new_v4().simple());
    let worker = spawn_worker(&topic, &group);
    let recorded_at_least = |n| wait_for_recorded(&pool, tenant, n);
    recorded_at_least(SESSIONS as i64 / 2).await;
    worker.kill();
    let before_kill = recorded(&pool, tenant).await;
    let all = 2 * SESSIONS as i64;
    assert!(
        before_kill < all,
        "the worker finished before it was killed; the test proves nothing"
    );

    let successor = spawn_worker(&topic, &group);
    recorded_at_least(all).await;
    // Let the successor run past the last message, in case anything would apply twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    successor.kill();

    assert_eq!(
        recorded(&pool, tenant).await,
        all,
        "two events per session, the repeat none"
    );
    let settled: Vec<(Uuid, String, i64, i64)> = sqlx::query_as(
        "SELECT s.id, s.status, \
           (SELECT count(*) FROM app_callback_events e WHERE e.session_id = s.id \
              AND e.outcome = 'settled'), \
           (SELECT count(*) FROM audit_events a WHERE a.tenant_id = s.tenant_id \
              AND a.action = 'app.callback.received' AND a.subject_id = s.id::text) \
         FROM app_callback_sessions s WHERE s.tenant_id = $1",
    )
    .bind(tenant)
    .fetch_all(&pool)
    .await
    .expect("sessions");
    assert_eq!(settled.len(), SESSIONS);
    for (session, status, settlements, audits) in settled {
        let i = sessions.iter().position(|s| *s == session).expect("ours");
        let first = if i % 2 == 0 { "completed" } else { "failed" };
        assert_eq!(status, first, "session {i}: its first event wins");
        assert_eq!(
            (settlements, audits),
            (1, 1),
            "session {i} settled once, audited once"
        );
    }
}

/// One partition's events, all queued before the stage starts (so they come as a batch): in
/// offset order the first final event settles its session, later ones are stale, a progress
/// event on a pending session is accepted, a repeat records nothing. Then an event naming no
/// session, queued with one more: it fails their batch, which is applied again one event at a
/// time, so it alone is dead-lettered and the other is recorded.
#[tokio::test]
async fn one_partitions_events_apply_in_order_and_a_bad_one_alone_is_dead_lettered() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let sessions = open_sessions(&pool, tenant, 2).await;
    let (a, b) = (sessions[0], sessions[1]);
    let event = |session: Uuid, event_id: &str, status| {
        Envelope::new(
            Some(tenant),
            Principal::system("vendor-webhook"),
            "req-batch",
            None,
            Event {
                session_id: session,
                app_name: APP.into(),
                external_id: format!("ext-{session}"),
                event_id: event_id.into(),
                status,
                output: Some(json!({"verified": true})),
                error: (status == EventStatus::Failed).then(|| "declined".to_owned()),
            },
        )
    };
    let topic = fresh_callbacks_topic().await;
    let producer = producer("batch-test");
    // One key for all: one partition, one lane, one order.
    let send = |envelope: Envelope<Event>| {
        let (producer, topic) = (producer.clone(), topic.clone());
        async move { send_keyed(&producer, &topic, a, &envelope).await }
    };
    for envelope in [
        event(b, "b-1", EventStatus::Pending),
        event(a, "a-1", EventStatus::Completed),
        event(a, "a-2", EventStatus::Failed),
        event(a, "a-1", EventStatus::Completed),
        event(b, "b-2", EventStatus::Completed),
        event(a, "a-3", EventStatus::Pending),
    ] {
        send(envelope).await;
    }

    let group = format!("callback-batch-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(consumer(&topic, &group, Duration::from_millis(200)).run(
        StageHandler::new(CallbacksStage, pool.clone(), None),
        stop.clone().cancelled_owned(),
    ));
    wait_for_recorded(&pool, tenant, 5).await;
    let nowhere = event(Uuid::now_v7(), "x-1", EventStatus::Completed);
    send(nowhere.clone()).await;
    send(event(b, "b-3", EventStatus::Pending)).await;
    wait_for_recorded(&pool, tenant, 6).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    while !dead_lettered(&nowhere.id.to_string()).await {
        assert!(
            Instant::now() < deadline,
            "the bad event is never dead-lettered"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("the consumer stops cleanly");

    let mut outcomes: Vec<(String, String)> =
        sqlx::query_as("SELECT event_id, outcome FROM app_callback_events WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_all(&pool)
            .await
            .expect("events");
    outcomes.sort();
    let expected = [
        ("a-1", "settled"),
        ("a-2", "stale"),
        ("a-3", "stale"),
        ("b-1", "accepted"),
        ("b-2", "settled"),
        ("b-3", "stale"),
    ];
    assert_eq!(
        outcomes,
        expected.map(|(e, o)| (e.to_owned(), o.to_owned())),
        "recorded once each, in offset order; the repeat of a-1 recorded nothing"
    );
    let statuses: Vec<String> = sqlx::query_scalar(
        "SELECT status FROM app_callback_sessions WHERE id = ANY($1) ORDER BY id",
    )
    .bind(&sessions)
    .fetch_all(&pool)
    .await
    .expect("sessions");
    assert_eq!(statuses, ["completed", "completed"]);
    let audits: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 \
         AND action = 'app.callback.received'",
    )
    .bind(tenant)
    .fetch_one(&pool)
    .await
    .expect("audits");
    assert_eq!(audits, 3, "a-1 settled, b-1 accepted, b-2 settled");
}

/// Another partition's writer records a vendor event id (for another session) while a batch
/// holding the same id is being applied: the batch's look-up does not see it yet, its insert
/// waits for it and then inserts nothing, and the batch is applied again one event at a time,
/// so the event is a duplicate there and the next one of the batch settles the session.
#[tokio::test]
async fn an_event_id_recorded_meanwhile_by_another_partition_is_a_duplicate() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    let sessions = open_sessions(&pool, tenant, 2).await;
    let (other, ours) = (sessions[0], sessions[1]);
    // The other partition's transaction, not committed yet.
    let mut theirs = pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO app_callback_events (id, tenant_id, app_name, session_id, event_id, \
         external_id, status, outcome, received_at) \
         VALUES ($1, $2, $3, $4, 'shared-1', 'ext-' || $4, 'completed', 'settled', now())",
    )
    .bind(Uuid::now_v7())
    .bind(tenant)
    .bind(APP)
    .bind(other)
    .execute(&mut *theirs)
    .await
    .expect("their event");
    let event = |event_id: &str| {
        Envelope::new(
            Some(tenant),
            Principal::system("vendor-webhook"),
            "req-raced",
            None,
            Event {
                session_id: ours,
                app_name: APP.into(),
                external_id: format!("ext-{ours}"),
                event_id: event_id.into(),
                status: EventStatus::Completed,
                output: Some(json!({"verified": true})),
                error: None,
            },
        )
    };
    let topic = fresh_callbacks_topic().await;
    let producer = producer("raced-test");
    // Both on the log before the consumer starts: one batch.
    for envelope in [event("shared-1"), event("ours-2")] {
        send_keyed(&producer, &topic, ours, &envelope).await;
    }
    let group = format!("callback-raced-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(consumer(&topic, &group, Duration::from_millis(200)).run(
        StageHandler::new(CallbacksStage, pool.clone(), None),
        stop.clone().cancelled_owned(),
    ));
    // The batch's insert waits for their row; then they commit.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
             AND query LIKE 'INSERT INTO app_callback_events%'",
        )
        .fetch_one(&pool)
        .await
        .expect("activity");
        if waiting > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the batch never reached its insert"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    theirs.commit().await.expect("their commit");
    wait_for_recorded(&pool, tenant, 2).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("the consumer stops cleanly");

    let mut outcomes: Vec<(Uuid, String, String)> = sqlx::query_as(
        "SELECT session_id, event_id, outcome FROM app_callback_events WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_all(&pool)
    .await
    .expect("events");
    outcomes.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        outcomes,
        [
            (ours, "ours-2".to_owned(), "settled".to_owned()),
            (other, "shared-1".to_owned(), "settled".to_owned()),
        ],
        "the shared id recorded once, by them; ours-2 settled our session"
    );
}

/// `count` pending sessions of the tenant's app, as the runs stage opens them (no run: the
/// stage resumes none).
async fn open_sessions(pool: &PgPool, tenant: Uuid, count: usize) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
    sqlx::query(
        "INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, \
         external_id, status, created_at) \
         SELECT id, $2, $3, $4, 'verify', 'ext-' || id, 'pending', now() FROM unnest($1::uuid[]) id",
    )
    .bind(&ids)
    .bind(tenant)
    .bind(APP)
    .bind(Uuid::now_v7())
    .execute(pool)
    .await
    .expect("sessions");
    ids
}

/// Produces `envelope` on `topic` under `key` (one key: one partition, in order), with its id
/// header as the route sends it.
async fn send_keyed(
    producer: &topics::Producer,
    topic: &str,
    key: Uuid,
    envelope: &Envelope<Event>,
) {
    let id = envelope.id.to_string();
    producer
        .send_raw(
            topic,
            &key.as_bytes()[..],
            &envelope.encode().expect("encode"),
            &[("id", id.as_bytes())],
        )
        .await
        .expect("produced");
}

async fn fresh_callbacks_topic() -> String {
    let name: &'static str =
        Box::leak(format!("test.callbacks.{}", Uuid::new_v4().simple()).into_boxed_str());
    let topic = Topic {
        name,
        ..Event::TOPIC
    };
    topics::admin::ensure_topics(&crate::support::cluster(), &[topic])
        .await
        .expect("topic created");
    name.to_owned()
}

async fn recorded(pool: &PgPool, tenant: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM app_callback_events WHERE tenant_id = $1")
        .bind(tenant)
        .fetch_one(pool)
        .await
        .expect("count")
}

async fn wait_for_recorded(pool: &PgPool, tenant: Uuid, at_least: i64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while recorded(pool, tenant).await < at_least {
        assert!(Instant::now() < deadline, "never {at_least} recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
