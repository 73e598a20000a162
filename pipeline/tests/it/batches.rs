//! A handler that takes batches gets what a partition has queued in one call, and a batch that
//! fails is split: its messages are applied one at a time, so the one that can never apply is
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

/// The probe stage, taking batches of up to 16: a batch is its messages applied one after
/// another (each in its own transaction, through the inbox), stopping at the first failure.
/// Records the size of every batch it is handed; holds its first call back a moment, so what
/// the test produced beforehand is all queued by then.
struct Batching<H> {
    inner: H,
    sizes: Arc<Mutex<Vec<usize>>>,
}

#[async_trait]
impl<H: Handler> Handler for Batching<H> {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.inner.handle(delivery).await
    }

    fn batch_limit(&self) -> usize {
        16
    }

    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        let first = {
            let mut sizes = self.sizes.lock().expect("lock");
            sizes.push(deliveries.len());
            sizes.len() == 1
        };
        if first {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
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

    let sizes = Arc::new(Mutex::new(Vec::new()));
    let handler = Batching {
        inner: stage_handler(&pool).await,
        sizes: Arc::clone(&sizes),
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
    let sizes = sizes.lock().expect("lock").clone();
    assert!(
        sizes.iter().all(|&size| size <= 16),
        "no batch beyond the limit: {sizes:?}"
    );
    assert!(
        sizes.iter().any(|&size| size > 1),
        "queued messages come as batches: {sizes:?}"
    );
    // Forty messages in batches of at most 16, with the failed batch's messages each handled
    // alone after: fewer calls than messages means batches happened; the split shows in the
    // poison message being dead-lettered while its batch's others were applied.
    assert!(sizes.len() < 40, "{sizes:?}");
}
