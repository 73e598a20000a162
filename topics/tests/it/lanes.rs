//! Each partition has its own lane: a partition whose first message cannot be applied yet (a
//! dependency "down", retried without a bound) holds back its own later messages, even past the
//! lane's pause mark, and nothing else; and a consumer stopped meanwhile stops.

use std::time::Duration;

use crate::support::{Act, Running, Script, Scripted, cluster, consumer, fresh_topic, group, send};

/// More than a lane holds before its partition is paused (1,024 messages).
const BEHIND: usize = 1_100;

#[tokio::test]
async fn a_stuck_partition_holds_back_only_itself_and_the_consumer_still_stops() {
    let cluster = cluster();
    let topic = fresh_topic(&cluster, 4).await;
    let producer = topics::Producer::new(&cluster, "lanes-test").expect("producer");

    let stuck = Scripted::new(Act::Stuck);
    let stuck_partition = send(&producer, &topic, "stuck", stuck).await;
    let mut behind = Vec::new();
    for _ in 0..BEHIND {
        let queued = Scripted::new(Act::Apply);
        behind.push(queued.id);
        let partition = send(&producer, &topic, "stuck", queued).await;
        assert_eq!(partition, stuck_partition, "one key, one partition");
    }
    let mut elsewhere = Vec::new();
    let mut n = 0;
    while elsewhere.len() < 10 {
        n += 1;
        let other = Scripted::new(Act::Apply);
        if send(&producer, &topic, &format!("other-{n}"), other).await != stuck_partition {
            elsewhere.push(other.id);
        }
    }

    let script = Script::new(1);
    let running = Running::start(consumer(&cluster, &topic, &group("lanes")), script.clone());
    script
        .wait_until(Duration::from_secs(90), |journal| {
            elsewhere.iter().all(|id| journal.applied.contains(id))
                && journal.attempts.get(&stuck.id).is_some_and(|n| *n > 3)
        })
        .await;
    {
        let journal = script.journal();
        for id in &behind {
            assert!(!journal.applied.contains(id), "applied past the stuck one");
        }
    }
    running.stop().await;
}
