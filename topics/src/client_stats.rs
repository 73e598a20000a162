//! The broker clients' own metrics: SPEC's "engine-core metrics" (`METRICS_PORT` + 1 on the
//! worker). This pipeline's engine is the Kafka cluster, so its core is librdkafka: every client
//! of the process (the stages' consumers and dead-letter producers, the command producer) sends
//! its statistics every [`INTERVAL_MS`] once [`enable`] was called, the last of each is kept, and
//! [`render`] writes them in text exposition:
//!
//! - `kafka_consumer_lag{client, topic, partition}`: messages between the committed offset and
//!   the partition's end, per partition the consumer owns (the number to watch: a stage falling
//!   behind);
//! - `kafka_consumer_fetch_queue_messages{client, topic, partition}`: fetched, not yet handed over;
//! - `kafka_consumer_rebalances_total{client}` and `kafka_consumer_assigned_partitions{client}`;
//! - `kafka_producer_queue_messages{client}`: produced, not yet acknowledged by the broker;
//! - `kafka_broker_up{client, broker}`, `kafka_broker_rtt_seconds{client, broker, stat}` (`avg`,
//!   `p99`; a consumer's include the fetch's wait for new messages, up to `fetch.wait.max.ms`),
//!   `kafka_broker_connects_total` and `kafka_broker_disconnects_total`;
//! - `kafka_client_sent_bytes_total{client}`, `kafka_client_received_bytes_total{client}`.
//!
//! `client` is the client's id, `pipeline-<stage>` for a stage's consumer. Statistics older than
//! three intervals (a client closed) are not written.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::Statistics;
use service::http::exposition::label_value;

/// How often each client reports, when enabled: a scrape's usual interval, and the OTLP push's.
/// Every report is a JSON document per client that librdkafka builds and we parse: at 5 s the
/// pipeline's 13 clients cost it 0.38 % of a core at rest, a third of all it used.
pub(crate) const INTERVAL_MS: u64 = 15_000;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// The last statistics of each client (by its id, the `client` label: a client made again, as
/// the admin client of a start-up retry is, replaces the one before), and when they came.
static LATEST: LazyLock<Mutex<HashMap<String, (Instant, Statistics)>>> =
    LazyLock::new(Mutex::default);

/// Asks the clients created from now on for their statistics (the worker does when it serves
/// core metrics; collecting them costs a JSON document per client every interval).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether clients are asked for statistics.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Keeps `statistics`, the last report of its client.
pub(crate) fn keep(statistics: Statistics) {
    LATEST
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(statistics.client_id.clone(), (Instant::now(), statistics));
}

/// The clients' last statistics in text exposition.
pub fn render() -> String {
    let stale = Duration::from_millis(3 * INTERVAL_MS);
    let mut latest = LATEST.lock().unwrap_or_else(PoisonError::into_inner);
    latest.retain(|_, (at, _)| at.elapsed() < stale);
    let mut families = Families::default();
    for (_, statistics) in latest.values() {
        families.add_client(statistics);
    }
    families.text()
}

/// Samples by metric family, each family written once with its type.
#[derive(Default)]
struct Families {
    samples: BTreeMap<(&'static str, &'static str), Vec<String>>,
}

impl Families {
    fn push(
        &mut self,
        name: &'static str,
        kind: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(label, value)| format!("{label}=\"{}\"", label_value(value)))
            .collect();
        self.samples
            .entry((name, kind))
            .or_default()
            .push(format!("{name}{{{}}} {value}", labels.join(",")));
    }

    fn add_client(&mut self, statistics: &Statistics) {
        let client = statistics.client_id.as_str();
        let of_client = [("client", client)];
        if statistics.client_type == "producer" {
            let queued = statistics.msg_cnt as f64;
            self.push("kafka_producer_queue_messages", "gauge", &of_client, queued);
        }
        if let Some(group) = &statistics.cgrp {
            let rebalances = group.rebalance_cnt as f64;
            self.push(
                "kafka_consumer_rebalances_total",
                "counter",
                &of_client,
                rebalances,
            );
            let assigned = f64::from(group.assignment_size);
            self.push(
                "kafka_consumer_assigned_partitions",
                "gauge",
                &of_client,
                assigned,
            );
        }
        let sent = statistics.tx_bytes as f64;
        self.push("kafka_client_sent_bytes_total", "counter", &of_client, sent);
        let received = statistics.rx_bytes as f64;
        self.push(
            "kafka_client_received_bytes_total",
            "counter",
            &of_client,
            received,
        );
        self.add_partitions(statistics);
        self.add_brokers(statistics);
    }

    fn add_partitions(&mut self, statistics: &Statistics) {
        if statistics.client_type != "consumer" {
            return;
        }
        for (topic, stats) in &statistics.topics {
            // Partition -1 is librdkafka's queue of messages without a partition yet.
            for partition in stats.partitions.values().filter(|p| p.partition >= 0) {
                // A lag of -1: unknown (the partition is not owned, or no offset committed yet).
                if partition.consumer_lag < 0 {
                    continue;
                }
                let number = partition.partition.to_string();
                let labels = [
                    ("client", statistics.client_id.as_str()),
                    ("topic", topic.as_str()),
                    ("partition", number.as_str()),
                ];
                let lag = partition.consumer_lag as f64;
                self.push("kafka_consumer_lag", "gauge", &labels, lag);
                let fetched = partition.fetchq_cnt as f64;
                self.push(
                    "kafka_consumer_fetch_queue_messages",
                    "gauge",
                    &labels,
                    fetched,
                );
            }
        }
    }

    fn add_brokers(&mut self, statistics: &Statistics) {
        // Bootstrap entries (node id -1) only stand for the configured addresses.
        for broker in statistics.brokers.values().filter(|b| b.nodeid >= 0) {
            let of_broker = [
                ("client", statistics.client_id.as_str()),
                ("broker", broker.nodename.as_str()),
            ];
            let up = if broker.state == "UP" { 1.0 } else { 0.0 };
            self.push("kafka_broker_up", "gauge", &of_broker, up);
            if let Some(connects) = broker.connects {
                self.push(
                    "kafka_broker_connects_total",
                    "counter",
                    &of_broker,
                    connects as f64,
                );
            }
            if let Some(disconnects) = broker.disconnects {
                let disconnects = disconnects as f64;
                self.push(
                    "kafka_broker_disconnects_total",
                    "counter",
                    &of_broker,
                    disconnects,
                );
            }
            // librdkafka reports round trips in microseconds; a window without samples is zero.
            if let Some(rtt) = broker.rtt.as_ref().filter(|rtt| rtt.cnt > 0) {
                for (stat, micros) in [("avg", rtt.avg), ("p99", rtt.p99)] {
                    let labels = [of_broker[0], of_broker[1], ("stat", stat)];
                    let seconds = micros as f64 / 1e6;
                    self.push("kafka_broker_rtt_seconds", "gauge", &labels, seconds);
                }
            }
        }
    }

    fn text(&self) -> String {
        let mut text = String::new();
        for ((name, kind), samples) in &self.samples {
            let _ = writeln!(text, "# TYPE {name} {kind}");
            for sample in samples {
                let _ = writeln!(text, "{sample}");
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consumer's statistics as librdkafka writes them, cut to what is read.
    const CONSUMER: &str = r#"{
        "name": "pipeline-runs#consumer-3", "client_id": "pipeline-runs", "type": "consumer",
        "ts": 1, "time": 1, "age": 1, "replyq": 0, "msg_cnt": 0, "msg_size": 0, "msg_max": 0,
        "msg_size_max": 0, "tx": 10, "tx_bytes": 1200, "rx": 10, "rx_bytes": 3400, "txmsgs": 0,
        "txmsg_bytes": 0, "rxmsgs": 5, "rxmsg_bytes": 500, "simple_cnt": 0,
        "metadata_cache_cnt": 1,
        "brokers": {
            "127.0.0.1:9092/1": {"name": "127.0.0.1:9092/1", "nodeid": 1,
                "nodename": "127.0.0.1:9092", "source": "learned", "state": "UP", "stateage": 1,
                "outbuf_cnt": 0, "outbuf_msg_cnt": 0, "waitresp_cnt": 0, "waitresp_msg_cnt": 0,
                "tx": 1, "txbytes": 1, "txerrs": 0, "txretries": 0, "txidle": 0, "req_timeouts": 0,
                "rx": 1, "rxbytes": 1, "rxerrs": 0, "rxcorriderrs": 0, "rxpartial": 0,
                "rxidle": 0, "zbuf_grow": 0, "buf_grow": 0, "wakeups": 1, "connects": 2,
                "disconnects": 1, "req": {},
                "rtt": {"min": 100, "max": 900, "avg": 250, "sum": 2500, "stddev": 10, "p50": 200,
                    "p75": 300, "p90": 500, "p95": 600, "p99": 800, "p99_99": 900,
                    "outofrange": 0, "hdrsize": 1, "cnt": 10},
                "toppars": {}},
            "GroupCoordinator": {"name": "GroupCoordinator", "nodeid": -1, "nodename": "",
                "source": "logical", "state": "UP", "stateage": 1, "outbuf_cnt": 0,
                "outbuf_msg_cnt": 0, "waitresp_cnt": 0, "waitresp_msg_cnt": 0, "tx": 0,
                "txbytes": 0, "txerrs": 0, "txretries": 0, "txidle": 0, "req_timeouts": 0, "rx": 0,
                "rxbytes": 0, "rxerrs": 0, "rxcorriderrs": 0, "rxpartial": 0, "rxidle": 0,
                "zbuf_grow": 0, "buf_grow": 0, "req": {}, "toppars": {}}
        },
        "topics": {
            "workflow-runs": {"topic": "workflow-runs", "age": 1, "metadata_age": 1,
                "batchsize": {"min": 0, "max": 0, "avg": 0, "sum": 0, "stddev": 0, "p50": 0,
                    "p75": 0, "p90": 0, "p95": 0, "p99": 0, "p99_99": 0, "outofrange": 0,
                    "hdrsize": 0, "cnt": 0},
                "batchcnt": {"min": 0, "max": 0, "avg": 0, "sum": 0, "stddev": 0, "p50": 0,
                    "p75": 0, "p90": 0, "p95": 0, "p99": 0, "p99_99": 0, "outofrange": 0,
                    "hdrsize": 0, "cnt": 0},
                "partitions": {
                    "0": {"partition": 0, "broker": 1, "leader": 1, "desired": true,
                        "unknown": false, "msgq_cnt": 0, "msgq_bytes": 0, "xmit_msgq_cnt": 0,
                        "xmit_msgq_bytes": 0, "fetchq_cnt": 7, "fetchq_size": 700,
                        "fetch_state": "active", "query_offset": 0, "next_offset": 50,
                        "app_offset": 43, "stored_offset": 43, "committed_offset": 40,
                        "eof_offset": 50, "lo_offset": 0, "hi_offset": 52, "ls_offset": 52,
                        "consumer_lag": 12, "consumer_lag_stored": 9, "txmsgs": 0, "txbytes": 0,
                        "rxmsgs": 50, "rxbytes": 5000, "msgs": 50, "rx_ver_drops": 0,
                        "msgs_inflight": 0, "next_ack_seq": 0, "next_err_seq": 0,
                        "acked_msgid": 0},
                    "1": {"partition": 1, "broker": 1, "leader": 1, "desired": false,
                        "unknown": false, "msgq_cnt": 0, "msgq_bytes": 0, "xmit_msgq_cnt": 0,
                        "xmit_msgq_bytes": 0, "fetchq_cnt": 0, "fetchq_size": 0,
                        "fetch_state": "none", "query_offset": 0, "next_offset": 0,
                        "app_offset": -1001, "stored_offset": -1001, "committed_offset": -1001,
                        "eof_offset": -1001, "lo_offset": -1001, "hi_offset": -1001,
                        "ls_offset": -1001, "consumer_lag": -1, "consumer_lag_stored": -1,
                        "txmsgs": 0, "txbytes": 0, "rxmsgs": 0, "rxbytes": 0, "msgs": 0,
                        "rx_ver_drops": 0, "msgs_inflight": 0, "next_ack_seq": 0,
                        "next_err_seq": 0, "acked_msgid": 0}
                }}
        },
        "cgrp": {"state": "up", "stateage": 1, "join_state": "steady", "rebalance_age": 1,
            "rebalance_cnt": 3, "rebalance_reason": "", "assignment_size": 1}
    }"#;

    #[test]
    fn a_consumers_statistics_become_its_lag_and_its_brokers_health() {
        let statistics: Statistics = serde_json::from_str(CONSUMER).expect("statistics");
        let mut families = Families::default();
        families.add_client(&statistics);
        let text = families.text();
        for line in [
            "# TYPE kafka_consumer_lag gauge",
            r#"kafka_consumer_lag{client="pipeline-runs",topic="workflow-runs",partition="0"} 12"#,
            r#"kafka_consumer_fetch_queue_messages{client="pipeline-runs",topic="workflow-runs",partition="0"} 7"#,
            "# TYPE kafka_consumer_rebalances_total counter",
            r#"kafka_consumer_rebalances_total{client="pipeline-runs"} 3"#,
            r#"kafka_consumer_assigned_partitions{client="pipeline-runs"} 1"#,
            r#"kafka_broker_up{client="pipeline-runs",broker="127.0.0.1:9092"} 1"#,
            r#"kafka_broker_rtt_seconds{client="pipeline-runs",broker="127.0.0.1:9092",stat="p99"} 0.0008"#,
            r#"kafka_broker_disconnects_total{client="pipeline-runs",broker="127.0.0.1:9092"} 1"#,
            r#"kafka_client_received_bytes_total{client="pipeline-runs"} 3400"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
        // The partition it does not own, and the logical coordinator entry, are left out.
        assert!(!text.contains(r#"partition="1""#), "{text}");
        assert_eq!(text.matches("kafka_broker_up{").count(), 1, "{text}");
        assert!(!text.contains("kafka_producer_queue_messages"), "{text}");
    }
}
