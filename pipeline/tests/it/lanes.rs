//! Each partition has its own lane: a partition whose first message cannot be applied yet (its
//! database "unreachable", retried without a bound) holds back its own later messages, even
//! past the lane's pause mark, and nothing else; and a consumer stopped meanwhile stops.

use std::time::Duration;

use topics::Envelope;
use uuid::Uuid;

use crate::support::{
    Counting, Probe, command, command_of, consumer, count, database, fresh_topic_with,
    produce_keyed, producer, stage_handler, wait_for,
};

/// More than a lane holds before its partition is paused.
const BEHIND: usize = 100;

#[tokio::test]
async fn a_stuck_partition_holds_back_only_itself_and_the_consumer_still_stops() {
    let pool = database().await;
    let topic = fresh_topic_with(4).await;
    let producer = producer("lanes-test");
    let send = |command: Envelope<Probe>| {
        let (producer, topic) = (producer.clone(), topic.clone());
        async move { produce_keyed(&producer, &topic, &command).await }
    };

    let tenant = Uuid::new_v4();
    let stuck = command_of(
        tenant,
        Probe::Outage {
            times: u32::MAX,
            value: 1,
        },
    );
    let stuck_partition = send(stuck).await;
    let mut behind = Vec::new();
    for _ in 0..BEHIND {
        let queued = command_of(tenant, Probe::Add { value: 2 });
        behind.push(queued.id);
        assert_eq!(
            send(queued).await,
            stuck_partition,
            "one key, one partition"
        );
    }
    let mut elsewhere = Vec::new();
    while elsewhere.len() < 10 {
        let other = command(Probe::Add { value: 3 });
        let id = other.id;
        if send(other).await != stuck_partition {
            elsewhere.push(id);
        }
    }

    let group = format!("lanes-{}", Uuid::new_v4().simple());
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = Counting(stage_handler(&pool).await, pool.clone());
    let running = tokio::spawn(
        consumer(&topic, &group, Duration::from_millis(200))
            .run(handler, stop.clone().cancelled_owned()),
    );
    for id in &elsewhere {
        wait_for(&pool, "effects", *id, 1, Duration::from_secs(90)).await;
    }
    for id in &behind {
        assert_eq!(
            count(&pool, "effects", *id).await,
            0,
            "applied past the stuck one"
        );
    }

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the consumer stops while a lane is stuck")
        .expect("join")
        .expect("a clean stop");
}
