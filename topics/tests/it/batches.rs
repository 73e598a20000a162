//! A handler that takes batches gets what a partition has queued in one call (up to its limit),
//! and a batch that fails is split: its messages are handed over one at a time, so the one that
//! can never apply is dead-lettered alone and every other is applied once.

use std::time::Duration;

use crate::support::{
    Act, Running, Script, Scripted, cluster, consumer, fresh_topic, group, on_dead_letter_topic,
    send,
};

#[tokio::test]
async fn queued_messages_arrive_as_batches_and_a_failed_batch_is_split() {
    let cluster = cluster();
    let topic = fresh_topic(&cluster, 1).await;
    let producer = topics::Producer::new(&cluster, "batches-test").expect("producer");
    let mut applied = Vec::new();
    let poison = Scripted::new(Act::Poison);
    for n in 0..40 {
        let message = if n == 25 {
            poison
        } else {
            Scripted::new(Act::Apply)
        };
        if n != 25 {
            applied.push(message.id);
        }
        send(&producer, &topic, "one-key", message).await;
    }

    // Everything is on the log before the consumer starts: its first fetch queues it all.
    let script = Script::new(16);
    let running = Running::start(
        consumer(&cluster, &topic, &group("batches")),
        script.clone(),
    );
    script
        .wait_until(Duration::from_secs(90), |journal| {
            applied.iter().all(|id| journal.applied.contains(id)) && !journal.dead.is_empty()
        })
        .await;
    running.stop().await;
    assert!(on_dead_letter_topic(&cluster, poison.id).await);

    let journal = script.journal();
    for id in &applied {
        assert_eq!(
            journal.applied.iter().filter(|a| *a == id).count(),
            1,
            "applied once: {id}"
        );
    }
    assert!(!journal.applied.contains(&poison.id));
    assert_eq!(journal.dead.len(), 1);
    assert_eq!(
        journal.dead[0].0, poison.id,
        "the poison message alone is dead-lettered"
    );
    let batches: Vec<&Vec<uuid::Uuid>> = journal.calls.iter().filter(|c| c.len() > 1).collect();
    assert!(
        !batches.is_empty() && batches.iter().all(|ids| ids.len() <= 16),
        "batches of two to the limit: {:?}",
        journal.calls
    );
    // The poison message's batch failed and was split: each of its messages was then handed
    // over alone, after the batch.
    let failed = journal
        .calls
        .iter()
        .position(|call| call.len() > 1 && call.contains(&poison.id))
        .unwrap_or_else(|| panic!("the poison message came in a batch: {:?}", journal.calls));
    for id in &journal.calls[failed] {
        assert!(
            journal.calls[failed + 1..].contains(&vec![*id]),
            "{id} of the failed batch handled alone after it: {:?}",
            journal.calls
        );
    }
}
