//! What a real broker will not do on demand, on librdkafka's mock cluster: produce requests
//! that fail (not enough replicas, a timeout) are retried by the producer, and every message is
//! acknowledged and consumed once; a broker down for 10 s under a steady stream of sends: every
//! send acknowledged was written and is consumed, and the consumer goes on after the broker's
//! return. (A send refused may still have been written, if its request was on its way when the
//! broker went: the count is printed, not asserted.)

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rdkafka::mocking::MockCluster;
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use topics::{Cluster, Producer, Replication};

use crate::support::{Act, Running, Script, Scripted, consumer, group, send};

const PARTITIONS: i32 = 4;

fn mock_with_topic(
    topic: &str,
) -> (
    MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    Cluster,
) {
    let mock = MockCluster::new(1).expect("a mock cluster");
    mock.create_topic(topic, PARTITIONS, 1).expect("topic");
    let cluster = Cluster::new(mock.bootstrap_servers(), Replication::SINGLE);
    (mock, cluster)
}

#[tokio::test]
async fn failed_produce_requests_are_retried_and_each_message_consumed_once() {
    let topic = "mock.request-errors";
    let (mock, cluster) = mock_with_topic(topic);
    let producer = Producer::new(&cluster, "mock-producer").expect("producer");
    // The first produce requests fail as a broker short of replicas or too slow answers them.
    mock.request_errors(
        RDKafkaApiKey::Produce,
        &[
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        ],
    );
    let mut sent = Vec::new();
    for n in 0..100 {
        let message = Scripted::new(Act::Apply);
        send(&producer, topic, &format!("k{n}"), message).await;
        sent.push(message.id);
    }

    let script = Script::new(1);
    let running = Running::start(consumer(&cluster, topic, &group("mock")), script.clone());
    script
        .wait_until(Duration::from_secs(60), |journal| {
            sent.iter().all(|id| journal.applied.contains(id))
        })
        .await;
    running.stop().await;
    let journal = script.journal();
    assert_eq!(
        journal.applied.len(),
        sent.len(),
        "each message consumed once"
    );
}

#[tokio::test]
async fn a_broker_down_for_10_s_loses_nothing_acknowledged() {
    let topic = "mock.broker-down";
    let (mock, cluster) = mock_with_topic(topic);
    let producer = Producer::new(&cluster, "mock-producer").expect("producer");
    let script = Script::new(1);
    let running = Running::start(consumer(&cluster, topic, &group("mock")), script.clone());

    // 50 sends a second for 20 s, each on its own task; the broker is down from 4 s to 14 s.
    let started = Instant::now();
    let mut sends = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut down = false;
    let mut up = false;
    for n in 0..1000 {
        tick.tick().await;
        if !down && started.elapsed() > Duration::from_secs(4) {
            mock.broker_down(1).expect("down");
            down = true;
        }
        if !up && started.elapsed() > Duration::from_secs(14) {
            mock.broker_up(1).expect("up");
            up = true;
        }
        let (producer, message) = (producer.clone(), Scripted::new(Act::Apply));
        sends.push(tokio::spawn(async move {
            let id = message.id.to_string();
            let sent = producer
                .send_raw(
                    topic,
                    format!("k{n}").as_bytes(),
                    &serde_json::to_vec(&message).expect("json"),
                    &[("id", id.as_bytes())],
                )
                .await;
            (message.id, sent.is_ok())
        }));
    }
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    for send in sends {
        let (id, ok) = send.await.expect("send task");
        if ok {
            acknowledged.push(id);
        } else {
            refused.push(id);
        }
    }
    assert!(
        !refused.is_empty(),
        "sends during the outage were refused within the delivery timeout"
    );
    script
        .wait_until(Duration::from_secs(90), |journal| {
            acknowledged.iter().all(|id| journal.applied.contains(id))
        })
        .await;
    // A little longer, for anything that should not be there to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    running.stop().await;

    let journal = script.journal();
    let applied: HashSet<_> = journal.applied.iter().collect();
    let refused_written = refused.iter().filter(|id| applied.contains(id)).count();
    let redelivered = journal.applied.len() - applied.len();
    eprintln!(
        "mock broker down 10 s: {} acknowledged, {} refused ({refused_written} of them written all the same), {redelivered} applied again after the return",
        acknowledged.len(),
        refused.len()
    );
}
