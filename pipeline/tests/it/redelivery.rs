//! A redelivered command is applied once: against the real broker and Postgres, a worker is
//! killed (SIGKILL) after committing a command's effect but before its offset is committed; the
//! next worker of the group gets the command again and the inbox answers it from the stored
//! reply. The workers are this test binary re-run as child processes. A command twice on the
//! log, one after the other or in one batch, is applied once too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use serde_json::json;
use topics::{Delivery, HandleError, Handler, Reply};
use uuid::Uuid;

use pipeline::StageHandler;

use crate::support::{
    BatchingProbeStage, Counting, Probe, ReplyListener, WorkerProcess, added, command, consumer,
    count, database, dead_lettered, fresh_topic, inbox_row, produce, produce_raw, replies,
    stage_handler, wait_for,
};

/// Runs as a child process of the redelivery tests: the probe stage, counting deliveries,
/// never committing within the test, so a kill loses the commit but not the effect.
#[tokio::test]
#[ignore = "started as a child process by the redelivery tests"]
async fn worker_process() {
    let pool = database().await;
    WorkerProcess::serve(Counting(stage_handler(&pool).await, pool)).await;
}

fn spawn_worker(topic: &str, group: &str) -> WorkerProcess {
    WorkerProcess::start("redelivery::worker_process", topic, group)
}

#[tokio::test]
async fn a_command_redelivered_after_a_crash_is_applied_once() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let group = format!("redelivery-{}", Uuid::new_v4().simple());
    let first = command(Probe::Add { value: 7 });
    produce(&topic, &first).await;

    let worker = spawn_worker(&topic, &group);
    wait_for(&pool, "effects", first.id, 1, Duration::from_secs(90)).await;
    // Killed after the effect committed and before the minute-long commit interval ended.
    worker.kill();
    assert_eq!(count(&pool, "deliveries", first.id).await, 1);

    // The redelivery is answered from the inbox, and its reply published again.
    let replied = ReplyListener::subscribe(first.id).await;
    let successor = spawn_worker(&topic, &group);
    wait_for(&pool, "deliveries", first.id, 2, Duration::from_secs(90)).await;
    assert_eq!(replied.reply(Duration::from_secs(60)).await, added(7));
    let second = command(Probe::Add { value: 8 });
    produce(&topic, &second).await;
    wait_for(&pool, "effects", second.id, 1, Duration::from_secs(60)).await;
    successor.kill();

    assert_eq!(
        count(&pool, "effects", first.id).await,
        1,
        "applied once despite redelivery"
    );
    assert_eq!(count(&pool, "inbox", first.id).await, 1);
    assert_eq!(
        inbox_row(&pool, first.id).await,
        (
            Some(json!({ "result": "done", "v": 1, "value": { "applied": 7 } })),
            None
        )
    );
}

#[tokio::test]
async fn the_same_command_twice_on_the_log_is_applied_once() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let duplicate = command(Probe::Add { value: 3 });
    produce(&topic, &duplicate).await;
    produce(&topic, &duplicate).await;
    let after = command(Probe::Add { value: 4 });
    produce(&topic, &after).await;

    let group = format!("duplicates-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = Counting(stage_handler(&pool).await, pool.clone());
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    wait_for(&pool, "effects", after.id, 1, Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");

    assert_eq!(
        count(&pool, "deliveries", duplicate.id).await,
        2,
        "both copies were delivered"
    );
    assert_eq!(
        count(&pool, "effects", duplicate.id).await,
        1,
        "and applied once"
    );
    assert_eq!(count(&pool, "effects", after.id).await, 1);
}

#[tokio::test]
async fn an_undecodable_message_is_dead_lettered_its_sender_told_and_the_partition_moves_on() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let poison_id = Uuid::new_v4();
    let replied = ReplyListener::subscribe(poison_id).await;
    produce_raw(&topic, b"{not an envelope", poison_id).await;
    let after = command(Probe::Add { value: 5 });
    produce(&topic, &after).await;

    let group = format!("poison-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = stage_handler(&pool).await;
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    match replied.reply(Duration::from_secs(90)).await {
        Reply::DeadLettered { reason } => assert!(reason.contains("decode"), "{reason}"),
        other => panic!("expected a dead letter, got {other:?}"),
    }
    wait_for(&pool, "effects", after.id, 1, Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");
    assert!(
        dead_lettered(&poison_id.to_string()).await,
        "the poison message is on the dead-letter topic"
    );
}

#[tokio::test]
async fn a_batch_holding_a_command_twice_applies_it_once_and_answers_both() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let twice = command(Probe::Add { value: 5 });
    let replied = ReplyListener::subscribe(twice.id).await;
    let mut others = Vec::new();
    produce(&topic, &twice).await;
    for value in 0..5 {
        let other = command(Probe::Add { value });
        produce(&topic, &other).await;
        others.push(other.id);
    }
    produce(&topic, &twice).await;

    // Everything is on the log before the consumer starts: its first fetch queues it all, and
    // the stage takes it as one batch.
    let group = format!("batch-duplicates-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let batches = Arc::new(Mutex::new(Vec::new()));
    let handler = Batches(
        Counting(
            StageHandler::new(
                BatchingProbeStage::default(),
                pool.clone(),
                Some(replies().await),
            ),
            pool.clone(),
        ),
        Arc::clone(&batches),
    );
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    for id in &others {
        wait_for(&pool, "effects", *id, 1, Duration::from_secs(90)).await;
    }
    wait_for(&pool, "effects", twice.id, 1, Duration::from_secs(90)).await;
    assert_eq!(replied.reply(Duration::from_secs(30)).await, added(5));
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");
    assert_eq!(count(&pool, "effects", twice.id).await, 1, "applied once");
    let batches = batches.lock().expect("batches").clone();
    assert!(
        batches
            .iter()
            .any(|ids| ids.iter().filter(|id| **id == twice.id).count() == 2),
        "both copies came in one batch: {batches:?}"
    );
    assert_eq!(
        count(&pool, "deliveries", twice.id).await,
        2,
        "both copies handled in their batch: it was not split"
    );
    for id in &others {
        assert_eq!(count(&pool, "effects", *id).await, 1);
    }
}

/// Keeps the ids of every batch handed to the handler it wraps.
struct Batches<H>(H, Arc<Mutex<Vec<Vec<Uuid>>>>);

#[async_trait]
impl<H: Handler> Handler for Batches<H> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.0.handle(delivery).await
    }

    fn batch_limit(&self) -> usize {
        self.0.batch_limit()
    }

    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        let ids = deliveries
            .iter()
            .filter_map(|d| d.header("id"))
            .filter_map(|id| std::str::from_utf8(id).ok())
            .filter_map(|id| Uuid::try_parse(id).ok())
            .collect();
        self.1.lock().expect("batches").push(ids);
        self.0.handle_batch(deliveries).await
    }

    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        self.0.dead_lettered(delivery, reason).await
    }
}
