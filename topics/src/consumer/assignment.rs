//! Which partitions this consumer owns, as the lanes need to know it: each partition has a
//! generation that a revocation bumps. A message is tagged with its partition's generation when
//! it is received; a lane drops the messages of an older generation instead of applying
//! messages another consumer now owns (the new owner gets them from the committed offset).
//!
//! The rebalance callback runs inside the receiving loop's poll, so a message received after a
//! revocation is always tagged with the new generation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;

use crate::client_log::Reporter;

/// The consumer's context: librdkafka's reports as every client of ours logs them, plus the
/// generations.
#[derive(Default)]
pub(super) struct Assignment {
    generations: Mutex<HashMap<i32, Arc<AtomicU64>>>,
    reporter: Reporter,
}

impl Assignment {
    /// The generation counter of `partition`, shared with its lane.
    pub(super) fn generation(&self, partition: i32) -> Arc<AtomicU64> {
        let mut generations = self
            .generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(generations.entry(partition).or_default())
    }
}

impl ClientContext for Assignment {
    fn stats(&self, statistics: rdkafka::Statistics) {
        self.reporter.stats(statistics);
    }

    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        self.reporter.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.reporter.error(error, reason);
    }
}

impl ConsumerContext for Assignment {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(partitions) = rebalance {
            for element in partitions.elements() {
                self.generation(element.partition())
                    .fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}
