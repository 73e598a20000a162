//! A message's offset is stored only after its handler returned: a consumer stopped while a
//! message cannot be applied yet leaves its group's committed offset just before that message,
//! so the next member of the group starts there, neither redelivering what was applied nor
//! skipping what was not.

use std::time::Duration;

use crate::support::{Act, Running, Script, Scripted, cluster, consumer, fresh_topic, group, send};

#[tokio::test]
async fn the_next_member_starts_at_the_first_message_not_applied() {
    let cluster = cluster();
    let topic = fresh_topic(&cluster, 1).await;
    let producer = topics::Producer::new(&cluster, "offsets-test").expect("producer");
    let before: Vec<Scripted> = (0..5).map(|_| Scripted::new(Act::Apply)).collect();
    let stuck = Scripted::new(Act::Stuck);
    for message in &before {
        send(&producer, &topic, "k", *message).await;
    }
    send(&producer, &topic, "k", stuck).await;
    for _ in 0..5 {
        send(&producer, &topic, "k", Scripted::new(Act::Apply)).await;
    }
    let group = group("offsets");

    let first = Script::new(1);
    let running = Running::start(consumer(&cluster, &topic, &group), first.clone());
    first
        .wait_until(Duration::from_secs(90), |journal| {
            journal.attempts.get(&stuck.id).is_some_and(|n| *n >= 2)
        })
        .await;
    running.stop().await;
    assert_eq!(first.journal().applied.len(), before.len());

    let next = Script::new(1);
    let running = Running::start(consumer(&cluster, &topic, &group), next.clone());
    next.wait_until(Duration::from_secs(90), |journal| {
        journal.attempts.contains_key(&stuck.id)
    })
    .await;
    running.stop().await;
    let journal = next.journal();
    assert_eq!(
        journal.calls.first(),
        Some(&vec![stuck.id]),
        "the next member starts at the stuck message: {:?}",
        journal.calls
    );
    for message in &before {
        assert!(!journal.attempts.contains_key(&message.id), "redelivered");
    }
}
