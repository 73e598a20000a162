//! What the broker itself costs a command, measured the way the services use it: our producer
//! (`acks=all`, idempotent, `linger.ms=1`) sends at a fixed rate to a fresh 4-partition topic
//! while a consumer (`fetch.wait.max.ms` as given) reads it back in the
//! same process. Prints the produce acknowledgement and produce-to-consume latencies, after a
//! warm-up second (a new idempotent producer stalls its first messages).
//!
//! `cargo run --release -p topics --example broker_latency -- BROKERS [RATE] [SECONDS] [FETCH_WAIT_MS] [BYTES] [LINGER_MS]`
//! (defaults: 500 messages/s, 30 s, the consumers' 100 ms, 700-byte payloads: an install
//! command's size, and the producer's default `linger.ms`). The rest of the cluster's settings
//! come from the environment as the services read them (`source .stack/env`).
//!
//! `cargo run --release -p topics --example broker_latency -- idle BROKERS [CONSUMERS] [SECONDS] [FETCH_WAIT_MS]`
//! keeps that many consumers polling an empty topic (defaults: 2, 20 s, 100 ms) so the broker's
//! idle cost of a fetch wait can be read from its CPU time meanwhile.
//!
//! `loadtests/install` runs both in the same run as the route's benchmark.

// A command-line tool: its output is its answer.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::Message as _;
use rdkafka::admin::AdminOptions;
use rdkafka::consumer::{Consumer as _, StreamConsumer};
use tokio::sync::Mutex;
use topics::Cluster;

#[path = "support/bench_topic.rs"]
mod bench_topic;

/// Left out of the figures: the first second after the clock starts.
const WARM_UP: Duration = Duration::from_secs(1);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("idle") {
        args.next();
        let brokers = args.next().ok_or(USAGE)?;
        let consumers: usize = args.next().map_or(Ok(2), |a| a.parse())?;
        let seconds: u64 = args.next().map_or(Ok(20), |a| a.parse())?;
        let fetch_wait_ms: u64 = args
            .next()
            .map_or(Ok(DEFAULT_FETCH_WAIT_MS), |a| a.parse())?;
        let cluster = bench_topic::cluster(&brokers)?;
        return idle(&cluster, consumers, seconds, fetch_wait_ms).await;
    }
    let brokers = args.next().ok_or(USAGE)?;
    let rate: u64 = args.next().map_or(Ok(500), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    let fetch_wait_ms: u64 = args
        .next()
        .map_or(Ok(DEFAULT_FETCH_WAIT_MS), |a| a.parse())?;
    let bytes: usize = args.next().map_or(Ok(700), |a| a.parse())?;
    let linger = match args.next() {
        Some(ms) => Duration::from_millis(ms.parse()?),
        None => topics::producer::DEFAULT_LINGER,
    };

    if !(1..=100_000).contains(&rate) {
        return Err("RATE must be 1 to 100000 messages a second".into());
    }
    let cluster = bench_topic::cluster(&brokers)?;
    let (admin, topic) = bench_topic::fresh(&cluster, "bench-latency").await?;
    let consumer = consumer(&cluster, &topic, &topic, fetch_wait_ms)?;
    let producer = topics::Producer::with_linger(&cluster, "broker-latency", linger)?;
    // One message there and back first: the consumer has joined its group and holds every
    // partition, and the producer is past its first-message stall, before the clock starts.
    producer.send_raw(&topic, b"warm-up", &[0; 8], &[]).await?;
    tokio::time::timeout(Duration::from_secs(60), consumer.recv())
        .await
        .map_err(|_| "the consumer got nothing within a minute")??;

    let start = Instant::now();
    let end_to_end = Arc::new(Mutex::new(Vec::new()));
    let total = rate * seconds;
    let reader = {
        let end_to_end = Arc::clone(&end_to_end);
        tokio::spawn(async move {
            let mut seen = 0;
            while seen < total {
                let Ok(Ok(message)) =
                    tokio::time::timeout(Duration::from_secs(30), consumer.recv()).await
                else {
                    break;
                };
                seen += 1;
                let sent = sent_at(message.payload().unwrap_or_default());
                if sent >= WARM_UP {
                    end_to_end.lock().await.push(start.elapsed() - sent);
                }
            }
            seen
        })
    };

    let acks = Arc::new(Mutex::new(Vec::new()));
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    let mut sends = Vec::with_capacity(total as usize);
    let topic_name: Arc<str> = Arc::from(topic.as_str());
    for n in 0..total {
        tick.tick().await;
        // Taken at the tick, so a send that starts late counts its wait (no coordinated omission).
        let sent = start.elapsed();
        let producer = producer.clone();
        let acks = Arc::clone(&acks);
        let topic_name = Arc::clone(&topic_name);
        sends.push(tokio::spawn(async move {
            let mut payload = (sent.as_nanos() as u64).to_be_bytes().to_vec();
            payload.resize(bytes.max(8), b'x');
            let key = (n % 50).to_string();
            producer
                .send_raw(&topic_name, key.as_bytes(), &payload, &[])
                .await?;
            if sent >= WARM_UP {
                acks.lock().await.push(start.elapsed() - sent);
            }
            Ok::<_, topics::Error>(())
        }));
    }
    let mut failed = 0;
    for send in sends {
        if !matches!(send.await, Ok(Ok(()))) {
            failed += 1;
        }
    }
    let consumed = reader.await?;
    let offered = start.elapsed();

    println!(
        "broker: {total} messages of {bytes} bytes at {rate}/s over {:.1} s, linger.ms={}, consumer fetch.wait.max.ms={fetch_wait_ms}; {failed} failed, {consumed} consumed",
        offered.as_secs_f64(),
        linger.as_millis()
    );
    print_line("produce ack", &mut acks.lock().await);
    print_line("produce to consume", &mut end_to_end.lock().await);
    admin.delete_topics(&[&topic], &AdminOptions::new()).await?;
    Ok(())
}

const USAGE: &str = "usage: broker_latency BROKERS [RATE] [SECONDS] [FETCH_WAIT_MS] [BYTES] [LINGER_MS] | idle BROKERS [CONSUMERS] [SECONDS] [FETCH_WAIT_MS]";

/// Consumers in their own groups on an empty topic, each fetching in a loop for `seconds`.
async fn idle(
    cluster: &Cluster,
    consumers: usize,
    seconds: u64,
    fetch_wait_ms: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let (admin, topic) = bench_topic::fresh(cluster, "bench-latency").await?;
    let mut polling = Vec::new();
    for n in 0..consumers {
        let consumer = consumer(cluster, &topic, &format!("{topic}-{n}"), fetch_wait_ms)?;
        let until = tokio::time::Instant::now() + Duration::from_secs(seconds);
        polling.push(tokio::spawn(async move {
            // Fetching the whole window, through any error the broker answers.
            while let Ok(received) = tokio::time::timeout_at(until, consumer.recv()).await {
                if received.is_err() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for consumer in polling {
        consumer.await?;
    }
    println!("idle: {consumers} consumers, fetch.wait.max.ms={fetch_wait_ms}, {seconds} s");
    admin.delete_topics(&[&topic], &AdminOptions::new()).await?;
    Ok(())
}

/// The platform consumers' fetch wait (`topics::consumer::FETCH_WAIT`).
const DEFAULT_FETCH_WAIT_MS: u64 = topics::consumer::FETCH_WAIT.as_millis() as u64;

fn consumer(
    cluster: &Cluster,
    topic: &str,
    group: &str,
    fetch_wait_ms: u64,
) -> Result<StreamConsumer, rdkafka::error::KafkaError> {
    let consumer: StreamConsumer = cluster
        .client_config(group)
        .set("group.id", group)
        .set("enable.auto.commit", "true")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", fetch_wait_ms.to_string())
        .create()?;
    consumer.subscribe(&[topic])?;
    Ok(consumer)
}

fn sent_at(payload: &[u8]) -> Duration {
    let nanos = payload
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_be_bytes);
    Duration::from_nanos(nanos)
}

/// `BROKER_LATENCY name p50 p99 max count` (milliseconds), for the script to pick up.
fn print_line(name: &str, samples: &mut [Duration]) {
    samples.sort_unstable();
    let at = |q: f64| {
        samples
            .get(((samples.len() as f64 * q) as usize).min(samples.len().saturating_sub(1)))
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "BROKER_LATENCY {} {:.2} {:.2} {:.2} {}",
        name.replace(' ', "_"),
        at(0.5),
        at(0.99),
        at(1.0),
        samples.len()
    );
}
