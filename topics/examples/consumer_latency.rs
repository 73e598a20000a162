//! What our consumer loop adds to the broker's hop: our producer sends at a fixed rate to a
//! fresh 4-partition topic while our `Consumer`, as the stages run it, hands each message to a
//! handler that notes produce-to-handle latency; then the consumer stays idle for as long, so
//! the broker's cost at rest can be read from its CPU meanwhile.
//!
//! `cargo run --release -p topics --example consumer_latency -- BROKERS [RATE] [SECONDS]`
//! (defaults: 100 messages/s, 30 s; the rest of the cluster's settings from the environment, as
//! the services read them). Low rates show an idle partition's first message (the broker
//! answers the waiting fetch); high ones, partitions that are never idle.

// A command-line tool: its output is its answer.
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rdkafka::admin::AdminOptions;
use topics::{Consumer, ConsumerOptions, Delivery, HandleError, Handler, RetryPolicy};

#[path = "support/bench_topic.rs"]
mod bench_topic;

const USAGE: &str = "usage: consumer_latency BROKERS [RATE] [SECONDS]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let brokers = args.next().ok_or(USAGE)?;
    let rate: u64 = args.next().map_or(Ok(100), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    if !(1..=100_000).contains(&rate) {
        return Err("RATE must be 1 to 100000 messages a second".into());
    }

    let cluster = bench_topic::cluster(&brokers)?;
    let (admin, topic) = bench_topic::fresh(&cluster, "bench-consumer").await?;
    let producer = topics::Producer::new(&cluster, "consumer-latency")?;
    let consumer = Consumer::new(
        &ConsumerOptions {
            cluster: cluster.clone(),
            group_id: topic.clone(),
            topic: topic.clone(),
            client_id: "consumer-latency".into(),
            commit_interval: Duration::from_millis(500),
            retry: RetryPolicy::default(),
            instance_id: None,
        },
        producer.clone(),
    )?;
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let handler = Noting(Arc::clone(&latencies));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let consuming = tokio::spawn(consumer.run(handler, async {
        let _ = stopped.await;
    }));

    // One message there and back first: the group formed, the producer past its first stall.
    producer
        .send_raw(&topic, b"warm-up", &now_micros().to_be_bytes(), &[])
        .await?;
    for _ in 0..600 {
        if !lock(&latencies).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    lock(&latencies).clear();

    let total = rate * seconds;
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    let topic_name: Arc<str> = Arc::from(topic.as_str());
    for n in 0..total {
        tick.tick().await;
        // Stamped at the tick, so a send that starts late counts its wait.
        let sent = now_micros();
        let (producer, topic_name) = (producer.clone(), Arc::clone(&topic_name));
        tokio::spawn(async move {
            let key = (n % 101).to_string();
            producer
                .send_raw(&topic_name, key.as_bytes(), &sent.to_be_bytes(), &[])
                .await
        });
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut handled = lock(&latencies).clone();
    println!(
        "consumer: {total} messages at {rate}/s over {seconds} s, {} handled",
        handled.len()
    );
    handled.sort_unstable();
    if let Some(max) = handled.last() {
        let at = |q: f64| handled[((handled.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
        println!(
            "produce to handle: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.1} ms",
            at(0.5),
            at(0.9),
            at(0.99),
            *max as f64 / 1000.0
        );
    }
    println!("idle: {seconds} s");
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let _ = stop.send(());
    consuming.await??;
    admin.delete_topics(&[&topic], &AdminOptions::new()).await?;
    Ok(())
}

/// Notes each message's produce-to-handle latency, in microseconds.
struct Noting(Arc<Mutex<Vec<u64>>>);

#[async_trait]
impl Handler for Noting {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        let sent = delivery
            .payload
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_be_bytes);
        lock(&self.0).push(now_micros().saturating_sub(sent));
        Ok(())
    }
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn lock(latencies: &Mutex<Vec<u64>>) -> std::sync::MutexGuard<'_, Vec<u64>> {
    latencies
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
