//! What the consumer does with a message whose handling fails: a failure of the message itself
//! is retried a bounded number of times, then the message is dead-lettered and the handler told;
//! a dependency that is down is waited for without a bound; a message that can never apply is
//! dead-lettered at once. In every case the partition goes on.

use std::time::Duration;

use crate::support::{
    Act, Running, Script, Scripted, cluster, consumer, fresh_topic, group, on_dead_letter_topic,
    send,
};

/// Sends `failing` then a plain message on one partition, consumes until the plain one is
/// applied, and answers the journal.
async fn consume_after(failing: Scripted) -> Script {
    let cluster = cluster();
    let topic = fresh_topic(&cluster, 1).await;
    let producer = topics::Producer::new(&cluster, "failures-test").expect("producer");
    send(&producer, &topic, "k", failing).await;
    let after = Scripted::new(Act::Apply);
    send(&producer, &topic, "k", after).await;
    let script = Script::new(1);
    let running = Running::start(
        consumer(&cluster, &topic, &group("failures")),
        script.clone(),
    );
    script
        .wait_until(Duration::from_secs(90), |journal| {
            journal.applied.contains(&after.id)
        })
        .await;
    running.stop().await;
    script
}

#[tokio::test]
async fn a_message_that_keeps_failing_is_dead_lettered_after_its_attempts() {
    let failing = Scripted::new(Act::FailAlways);
    let script = consume_after(failing).await;
    {
        let journal = script.journal();
        assert_eq!(journal.attempts[&failing.id], 3, "three attempts");
        assert_eq!(journal.dead.len(), 1);
        assert!(
            journal.dead[0].1.contains("gave up after 3 attempts"),
            "{:?}",
            journal.dead
        );
    }
    assert!(on_dead_letter_topic(&cluster(), failing.id).await);
}

#[tokio::test]
async fn a_dependency_that_is_down_is_waited_for_past_the_attempts() {
    let failing = Scripted::new(Act::Outage { times: 6 });
    let journal = consume_after(failing).await;
    let journal = journal.journal();
    assert_eq!(
        journal.attempts[&failing.id], 7,
        "six outages, twice the attempt bound, then applied"
    );
    assert!(journal.applied.contains(&failing.id));
    assert!(journal.dead.is_empty());
}

#[tokio::test]
async fn a_message_that_can_never_apply_is_dead_lettered_at_once() {
    let failing = Scripted::new(Act::Poison);
    let script = consume_after(failing).await;
    {
        let journal = script.journal();
        assert_eq!(journal.attempts[&failing.id], 1);
        assert_eq!(journal.dead.len(), 1);
        assert_eq!(journal.dead[0].0, failing.id);
    }
    assert!(on_dead_letter_topic(&cluster(), failing.id).await);
}
