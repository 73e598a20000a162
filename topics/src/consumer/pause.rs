//! Why a partition is paused at the broker: its lane holds too many messages (back-pressure,
//! `lane.rs`), or it is idle (read to its end, nothing announced beyond it: `idle.rs`).
//! librdkafka has one pause per partition, so the reasons are kept together and the partition
//! is paused while either holds; one lock per partition, so a pause and a resume never cross.
//!
//! librdkafka keeps the position across a pause: a resumed partition fetches from the message
//! after the last one received, so nothing is skipped or received twice. Whoever resumes a
//! partition that someone waits on tells `fetcher.rs`, without which librdkafka may not fetch
//! it for a second.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use rdkafka::consumer::Consumer as _;
use rdkafka::{Offset, TopicPartitionList};

use super::Consumer;

/// Why a partition is paused.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reasons {
    /// Its lane holds its pause mark of messages.
    pub(super) backlog: bool,
    /// Read to its end with nothing announced beyond it.
    pub(super) idle: bool,
}

#[derive(Debug, Default)]
struct State {
    reasons: Reasons,
    /// What librdkafka was last told.
    paused: bool,
}

/// One partition's pause.
#[derive(Debug, Default)]
pub(super) struct Pause {
    state: Mutex<State>,
}

impl Pause {
    /// Changes the reasons (under the partition's lock) and pauses or resumes the partition
    /// when that changes whether it should be paused; `true` when it resumed it.
    pub(super) fn update(
        &self,
        consumer: &Consumer,
        partition: i32,
        change: impl FnOnce(&mut Reasons),
    ) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut state.reasons);
        let wanted = state.reasons.backlog || state.reasons.idle;
        if state.paused == wanted {
            return false;
        }
        let mut partitions = TopicPartitionList::new();
        if partitions
            .add_partition_offset(&consumer.topic, partition, Offset::Invalid)
            .is_err()
        {
            return false;
        }
        let result = if wanted {
            consumer.inner.pause(&partitions)
        } else {
            consumer.inner.resume(&partitions)
        };
        match result {
            Ok(()) => {
                state.paused = wanted;
                !wanted
            }
            Err(error) => {
                tracing::warn!(topic = %consumer.topic, partition, %error, "pause or resume failed");
                false
            }
        }
    }
}

/// Every partition's pause, created when first needed.
#[derive(Debug, Default)]
pub(super) struct Pauses {
    partitions: Mutex<HashMap<i32, Arc<Pause>>>,
}

impl Pauses {
    /// The pause of `partition`, shared with its lane.
    pub(super) fn of(&self, partition: i32) -> Arc<Pause> {
        let mut partitions = self
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(partitions.entry(partition).or_default())
    }

    /// Whether any of `assigned` other than `except` is fetching (not paused at the broker).
    pub(super) fn any_fetching(&self, assigned: &[i32], except: &BTreeSet<i32>) -> bool {
        let partitions = self
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assigned
            .iter()
            .filter(|partition| !except.contains(partition))
            .any(|partition| {
                partitions.get(partition).is_none_or(|pause| {
                    !pause
                        .state
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .paused
                })
            })
    }
}
