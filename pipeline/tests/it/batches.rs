//! A handler that takes batches gets what a partition has queued in one call (up to its limit),
//! and a batch that fails is split: its messages are applied one at a time, so the one that can never apply is
//! dead-lettered alone and every other is applied once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use topics::{Delivery, HandleError, Handler};
use uuid::Uuid;

use crate::support::{
    Probe, ReplyListener, command_of, consumer, count, database, dead_lettered, fresh_topic,
    produce, stage_handler, wait_for,
};

/// What the consumer handed the handler: a batch, or one message alone.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Batch(Vec<Uuid>),
    Single(Uuid),
}

fn id_of(delivery: &Delivery<'_>) -> Uuid {
    delivery
        .header("id")
        .and_then(|id| std::str::from_utf8(id).ok())
        .and_then(|id| Uuid::try_parse(id).ok())
        .expect("an id header")
}

/// The probe stage, taking batches of up to 16: a batch is its messages applied one after
/// another (each in its own transaction, through the inbox), stopping at the first failure.
/// Records every call; holds its first call back a moment, so what the test produced
/// beforehand is all queued by the next one.
struct Batching<H> {
    inner: H,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl<H> Batching<H> {
    async fn record(&self, call: Call) {
        let first = {
            let mut calls = self.calls.lock().expect("lock");
            calls.push(call);
            calls.len() == 1
        };
        if first {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[async_trait]
impl<H: Handler> Handler for Batching<H> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.record(Call::Single(id_of(delivery))).await;
        self.inner.handle(delivery).await
    }

    fn batch_limit(&self) -> usize {
        16
    }

    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        self.record(Call::Batch(deliveries.iter().map(id_of).collect()))
            .await;
        for delivery in deliveries {
            self.inner.handle(delivery).await?;
        }
        Ok(())
    }

    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        self.inner.dead_lettered(delivery, reason).await
    }
}

#[tokio::test]
async fn queued_messages_arrive_as_batches_and_a_failed_batch_is_split() {
    let pool = database().await;
    let topic = fresh_topic().await;
    let tenant = Uuid::new_v4();
    let mut added = Vec::new();
    let mut poison = None;
    for n in 0..40 {
        let body = if n == 25 {
            Probe::Duplicate
        } else {
            Probe::Add { value: n }
        };
        let message = command_of(tenant, body);
        if n == 25 {
            poison = Some(message.id);
        } else {
            added.push(message.id);
        }
        produce(&topic, &message).await;
    }
    let poison = poison.expect("a poison message");
    let replied = ReplyListener::subscribe(poison).await;

    let calls = Arc::new(Mutex::new(Vec::new()));
    let handler = Batching {
        inner: stage_handler(&pool).await,
        calls: Arc::clone(&calls),
    };
    let group = format!("batches-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    for id in &added {
        wait_for(&pool, "effects", *id, 1, Duration::from_secs(90)).await;
    }
    let reply = replied.reply(Duration::from_secs(90)).await;
    stop.cancel();
    running
        .await
        .expect("join")
        .expect("consumer stops cleanly");

    assert!(
        matches!(reply, topics::Reply::DeadLettered { .. }),
        "the poison message is dead-lettered: {reply:?}"
    );
    assert!(dead_lettered(&poison.to_string()).await);
    for id in &added {
        assert_eq!(count(&pool, "effects", *id).await, 1, "applied once: {id}");
    }
    assert_eq!(count(&pool, "effects", poison).await, 0);
    let calls = calls.lock().expect("lock").clone();
    let batches: Vec<&Vec<Uuid>> = calls
        .iter()
        .filter_map(|call| match call {
            Call::Batch(ids) => Some(ids),
            Call::Single(_) => None,
        })
        .collect();
    assert!(
        batches.iter().all(|ids| ids.len() > 1 && ids.len() <= 16),
        "batches of two to the limit: {calls:?}"
    );
    // The poison message's batch failed and was split: each of its messages was then handed
    // over alone, after the batch.
    let failed = calls
        .iter()
        .position(|call| matches!(call, Call::Batch(ids) if ids.contains(&poison)))
        .unwrap_or_else(|| panic!("the poison message came in a batch: {calls:?}"));
    let Call::Batch(split) = &calls[failed] else {
        unreachable!("found as a batch")
    };
    for id in split {
        assert!(
            calls[failed + 1..].contains(&Call::Single(*id)),
            "{id} of the failed batch handled alone after it: {calls:?}"
        );
    }
}
