//! What the consumer does with a command that fails: a failure of the command itself is retried
//! a bounded number of times, then the command is dead-lettered and its sender told at once; a
//! dependency that is down is waited for without a bound; a command that can never apply is
//! dead-lettered at once. In every case the partition goes on.

use std::time::Duration;

use topics::Reply;
use uuid::Uuid;

use crate::support::{
    Counting, Probe, ReplyListener, added, command, consumer, count, database, dead_lettered,
    fresh_topic, inbox_row, produce, stage_handler, wait_for,
};

/// Produces `failing` then a plain command, consumes until the plain one is applied, and
/// answers the reply `failing` got.
async fn consume_after(failing: Probe) -> (Uuid, Reply, sqlx::PgPool) {
    let pool = database().await;
    let topic = fresh_topic().await;
    let failing = command(failing);
    let replied = ReplyListener::subscribe(failing.id).await;
    produce(&topic, &failing).await;
    let after = command(Probe::Add { value: 1 });
    produce(&topic, &after).await;

    let group = format!("dead-letters-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = Counting(stage_handler(&pool).await, pool.clone());
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    let reply = replied.reply(Duration::from_secs(90)).await;
    wait_for(&pool, "effects", after.id, 1, Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");
    (failing.id, reply, pool)
}

#[tokio::test]
async fn a_command_that_keeps_failing_is_dead_lettered_after_its_attempts() {
    let (id, reply, pool) = consume_after(Probe::Slow).await;
    match reply {
        Reply::DeadLettered { reason } => {
            assert!(reason.contains("gave up after 3 attempts"), "{reason}");
        }
        other => panic!("expected a dead letter, got {other:?}"),
    }
    assert_eq!(count(&pool, "deliveries", id).await, 3, "three attempts");
    let (outcome, reason) = inbox_row(&pool, id).await;
    assert_eq!(outcome, None);
    assert!(reason.is_some_and(|r| r.contains("gave up")));
    assert!(dead_lettered(&id.to_string()).await);
}

#[tokio::test]
async fn a_dependency_that_is_down_is_waited_for_past_the_attempts() {
    let (id, reply, pool) = consume_after(Probe::Outage { times: 6, value: 9 }).await;
    assert_eq!(reply, added(9));
    assert_eq!(
        count(&pool, "deliveries", id).await,
        7,
        "six outages, twice the attempt bound, then applied"
    );
    assert_eq!(count(&pool, "effects", id).await, 1);
}

#[tokio::test]
async fn a_constraint_the_command_runs_into_dead_letters_it_at_once() {
    let (id, reply, pool) = consume_after(Probe::Duplicate).await;
    match reply {
        Reply::DeadLettered { reason } => assert!(reason.contains("database"), "{reason}"),
        other => panic!("expected a dead letter, got {other:?}"),
    }
    assert_eq!(count(&pool, "deliveries", id).await, 1, "not retried");
    assert_eq!(count(&pool, "effects", id).await, 0);
    assert!(inbox_row(&pool, id).await.1.is_some());
}
