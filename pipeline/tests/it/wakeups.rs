//! A consumer with wake-ups leaves the partitions it has read to the end paused and resumes
//! them when a message is announced there (`topics::wakeups`): messages sent one at a time
//! between rests, then in bursts, are each received once and applied once; and a message whose
//! producer announces nothing still arrives, through the safety poll.

use std::time::Duration;

use rand::Rng;
use topics::{Envelope, Producer};
use uuid::Uuid;

use crate::support::{
    Counting, Probe, command, consumer, count, database, fresh_topic_with, produce_keyed, producer,
    stack, stage_handler, wait_for,
};

const PARTITIONS: i32 = 4;

#[tokio::test]
async fn resting_partitions_wake_for_each_message_and_receive_it_once() {
    let pool = database().await;
    let topic = fresh_topic_with(PARTITIONS).await;
    let producer = producer("wakeups-test");
    let running = Running::start(&pool, &topic).await;

    let mut sent = Vec::new();
    // One at a time, each after the partitions had time to reach their end and rest.
    for _ in 0..30 {
        let pause = rand::rng().random_range(20..200);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        sent.push(send(&producer, &topic).await);
    }
    // Bursts, some while a partition is pausing or waking.
    for _ in 0..5 {
        let burst: Vec<_> = (0..40).map(|_| send(&producer, &topic)).collect();
        sent.extend(futures::future::join_all(burst).await);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    for id in &sent {
        wait_for(&pool, "effects", *id, 1, Duration::from_secs(60)).await;
    }
    for id in &sent {
        assert_eq!(count(&pool, "effects", *id).await, 1, "applied once");
        assert_eq!(count(&pool, "deliveries", *id).await, 1, "received once");
    }
    running.stop().await;
}

#[tokio::test]
async fn a_message_nobody_announces_arrives_through_the_safety_poll() {
    let pool = database().await;
    let topic = fresh_topic_with(1).await;
    let running = Running::start(&pool, &topic).await;
    // The consumer has its partition and read it to the end.
    let first = send(&producer("wakeups-test"), &topic).await;
    wait_for(&pool, "effects", first, 1, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let silent = Producer::new(stack().var("KAFKA_BROKERS"), "wakeups-silent").expect("producer");
    let unannounced = send(&silent, &topic).await;
    wait_for(&pool, "effects", unannounced, 1, Duration::from_secs(30)).await;
    assert_eq!(count(&pool, "deliveries", unannounced).await, 1);
    running.stop().await;
}

/// A consumer with wake-ups (the test stage's handler, counting deliveries) in a group of its
/// own.
struct Running {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<Result<(), topics::Error>>,
}

impl Running {
    async fn start(pool: &sqlx::PgPool, topic: &str) -> Self {
        let group = format!("wakeups-{}", Uuid::new_v4().simple());
        let stop = tokio_util::sync::CancellationToken::new();
        let handler = Counting(stage_handler(pool).await, pool.clone());
        let task = tokio::spawn(
            consumer(topic, &group, Duration::from_millis(200))
                .run(handler, stop.clone().cancelled_owned()),
        );
        Self { stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.expect("join").expect("a clean stop");
    }
}

/// Sends an `Add` under a key of its own; answers its id.
async fn send(producer: &Producer, topic: &str) -> Uuid {
    let command: Envelope<Probe> = command(Probe::Add { value: 1 });
    produce_keyed(producer, topic, &command).await;
    command.id
}
