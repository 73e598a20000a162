//! A consumer whose group leaves partitions to nobody rejoins the group, and the backlog is
//! applied, once each. The group is put in that state by a leader that assigns no partition
//! and stays alive (`rogue_leader`), which is what a member sees of tansu's faulty formations:
//! without the consumer's rejoin nothing would ever move, since the group is formed and its
//! members heartbeat.

use std::collections::HashSet;
use std::time::Duration;

use uuid::Uuid;

use crate::rogue_leader::RogueLeader;
use crate::support::{
    Counting, Probe, command, consumer_with, count, database, fresh_topic_with, produce_keyed,
    producer, stack, stage_handler, wait_for,
};

const PARTITIONS: i32 = 4;

#[tokio::test]
async fn partitions_the_group_left_to_nobody_are_taken_up_after_a_rejoin() {
    let pool = database().await;
    let topic = fresh_topic_with(PARTITIONS).await;
    let brokers = stack().var("KAFKA_BROKERS");
    let producer = producer("orphans-test");
    let (mut ids, mut partitions) = (Vec::new(), HashSet::new());
    while partitions.len() < PARTITIONS as usize || ids.len() < 20 {
        let backlog = command(Probe::Add { value: 1 });
        ids.push(backlog.id);
        partitions.insert(produce_keyed(&producer, &topic, &backlog).await);
    }

    let group = format!("orphans-{}", Uuid::new_v4().simple());
    let mut leader = RogueLeader::lead(brokers, &group, &topic).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let handler = Counting(stage_handler(&pool).await, pool.clone());
    let running = tokio::spawn(
        consumer_with(
            &topic,
            &group,
            Duration::from_millis(200),
            Duration::from_secs(3),
        )
        .run(handler, stop.clone().cancelled_owned()),
    );
    let members = leader.wait_for_members(2, Duration::from_secs(60)).await;
    leader.assign_nothing(&members).await;
    let held = tokio::spawn(leader.hold_until_rebalance(Duration::from_secs(120)));

    for id in &ids {
        wait_for(&pool, "effects", *id, 1, Duration::from_secs(120)).await;
    }
    assert!(
        held.await.expect("leader"),
        "the group rebalanced because the consumer rejoined it"
    );
    for id in &ids {
        assert_eq!(count(&pool, "effects", *id).await, 1, "applied once");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .expect("the consumer stops")
        .expect("join")
        .expect("a clean stop");
}
