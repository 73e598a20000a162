//! Partitions nobody consumes. tansu 0.6.0's group coordinator can form a group whose assignment
//! leaves partitions to no live member: a member that dies between its JoinGroup and the
//! leader's SyncGroup is dropped from the members but keeps its share of the assignment, and
//! since the live members heartbeat, no rebalance ever comes (README, "known issues"). No
//! broker API tells: tansu answers DescribeGroups with empty assignments. So each member watches
//! what it can see, every quarter of `orphan_after`: the group's committed offset and the high
//! watermark of every partition of its topic.
//!
//! A partition that is not this member's, has a backlog, and whose committed offset has not
//! moved for `orphan_after` is taken as orphaned, and the member leaves and joins the group
//! again, which makes the coordinator rebalance. A live member stuck on one message looks the
//! same from outside, which is why `orphan_after` is longer than a healthy message holds its
//! partition (retries included), and why this member does nothing while one of its own
//! partitions stands still too: then a dependency is down for everyone, and a rebalance would
//! only add churn. Rejoins that do not help are spaced out, doubling up to [`MAX_REJOIN_WAIT`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{Consumer as _, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::watch;

use super::assignment::Assignment;
use super::{Consumer, pause};
use crate::Error;

/// The longest wait between two rejoins while partitions stay orphaned.
const MAX_REJOIN_WAIT: Duration = Duration::from_secs(30 * 60);

/// How long one look at the broker may take.
const LOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// Watches `consumer`'s topic until `stopped`, rejoining the group when partitions are orphaned.
pub(super) async fn watch(
    consumer: Arc<Consumer>,
    orphan_after: Duration,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), Error> {
    let mut judge = Judge::new(orphan_after);
    while pause(orphan_after / 4, &mut stopped).await {
        let looking = Arc::clone(&consumer);
        let seen = tokio::task::spawn_blocking(move || look(&looking.inner, &looking.topic)).await;
        let partitions = match seen {
            Ok(Ok(partitions)) => partitions,
            Ok(Err(error)) => {
                tracing::debug!(topic = %consumer.topic, %error, "partitions not looked at");
                continue;
            }
            Err(panicked) => return Err(Error::Fatal(format!("orphan watch: {panicked}"))),
        };
        if let Verdict::Rejoin(orphaned) = judge.judge(Instant::now(), &partitions) {
            tracing::warn!(
                topic = %consumer.topic,
                ?orphaned,
                "partitions with a backlog nobody consumes; rejoining the group"
            );
            metrics::counter!("consumer.rejoins", "topic" => consumer.topic.clone()).increment(1);
            consumer.rejoin()?;
        }
    }
    Ok(())
}

/// What this member sees of one partition of its topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Partition {
    id: i32,
    /// Assigned to this member.
    owned: bool,
    /// The group's committed offset (the next message to apply), if any.
    committed: Option<i64>,
    low: i64,
    high: i64,
}

impl Partition {
    fn has_backlog(&self) -> bool {
        self.committed.unwrap_or(self.low) < self.high
    }
}

/// Every partition of `topic`, as the broker and the group coordinator see it now.
fn look(consumer: &StreamConsumer<Assignment>, topic: &str) -> Result<Vec<Partition>, KafkaError> {
    let metadata = consumer.fetch_metadata(Some(topic), LOOK_TIMEOUT)?;
    let ids: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    let owned: HashSet<i32> = consumer
        .assignment()?
        .elements_for_topic(topic)
        .iter()
        .map(|e| e.partition())
        .collect();
    let mut asked = TopicPartitionList::new();
    for &id in &ids {
        asked.add_partition(topic, id);
    }
    let committed = consumer.committed_offsets(asked, LOOK_TIMEOUT)?;
    ids.iter()
        .map(|&id| {
            let (low, high) = consumer.fetch_watermarks(topic, id, LOOK_TIMEOUT)?;
            let committed = committed
                .find_partition(topic, id)
                .and_then(|e| match e.offset() {
                    Offset::Offset(offset) => Some(offset),
                    _ => None,
                });
            Ok(Partition {
                id,
                owned: owned.contains(&id),
                committed,
                low,
                high,
            })
        })
        .collect()
}

/// What to do after a look.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// No partition is orphaned.
    Flowing,
    /// Partitions stand still, but a rejoin would not help yet (one of ours stands still too,
    /// or the last rejoin was too recent).
    Waiting,
    /// These partitions are orphaned: rejoin the group.
    Rejoin(Vec<i32>),
}

/// Remembers since when each partition's committed offset stands still behind its backlog.
#[derive(Debug)]
struct Judge {
    orphan_after: Duration,
    /// Per partition with a backlog: the committed offset last seen and since when.
    standing: HashMap<i32, (Option<i64>, Instant)>,
    rejoin_wait: Duration,
    next_rejoin: Option<Instant>,
}

impl Judge {
    fn new(orphan_after: Duration) -> Self {
        Self {
            orphan_after,
            standing: HashMap::new(),
            rejoin_wait: orphan_after,
            next_rejoin: None,
        }
    }

    fn judge(&mut self, now: Instant, partitions: &[Partition]) -> Verdict {
        let (mut orphaned, mut others_stand_still, mut ours_stand_still) =
            (Vec::new(), false, false);
        for partition in partitions {
            let still = self.standing_still(now, partition);
            if !partition.owned && !still.is_zero() {
                others_stand_still = true;
            }
            if still < self.orphan_after {
                continue;
            }
            if partition.owned {
                ours_stand_still = true;
            } else {
                orphaned.push(partition.id);
            }
        }
        if !others_stand_still {
            // Every other partition moved or caught up: whatever was wrong has passed.
            self.rejoin_wait = self.orphan_after;
            self.next_rejoin = None;
        }
        if orphaned.is_empty() {
            return Verdict::Flowing;
        }
        if ours_stand_still || self.next_rejoin.is_some_and(|at| now < at) {
            return Verdict::Waiting;
        }
        self.next_rejoin = Some(now + self.rejoin_wait);
        self.rejoin_wait = (self.rejoin_wait * 2).min(MAX_REJOIN_WAIT);
        // The new assignment gets its own time.
        for (_, since) in self.standing.values_mut() {
            *since = now;
        }
        Verdict::Rejoin(orphaned)
    }

    /// How long `partition`'s committed offset has stood still behind a backlog.
    fn standing_still(&mut self, now: Instant, partition: &Partition) -> Duration {
        if !partition.has_backlog() {
            self.standing.remove(&partition.id);
            return Duration::ZERO;
        }
        let (committed, since) = self
            .standing
            .entry(partition.id)
            .or_insert((partition.committed, now));
        if *committed != partition.committed {
            (*committed, *since) = (partition.committed, now);
        }
        now.saturating_duration_since(*since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AFTER: Duration = Duration::from_secs(120);

    fn partition(id: i32, owned: bool, committed: Option<i64>, high: i64) -> Partition {
        Partition {
            id,
            owned,
            committed,
            low: 0,
            high,
        }
    }

    #[test]
    fn a_backlog_nobody_moves_for_the_whole_wait_is_orphaned() {
        let mut judge = Judge::new(AFTER);
        let t0 = Instant::now();
        let seen = [partition(0, true, Some(5), 5), partition(1, false, None, 3)];
        assert_eq!(judge.judge(t0, &seen), Verdict::Flowing);
        assert_eq!(judge.judge(t0 + AFTER / 2, &seen), Verdict::Flowing);
        assert_eq!(judge.judge(t0 + AFTER, &seen), Verdict::Rejoin(vec![1]));
    }

    #[test]
    fn a_committed_offset_that_moves_or_a_caught_up_partition_is_not_orphaned() {
        let mut judge = Judge::new(AFTER);
        let t0 = Instant::now();
        for step in 0..10 {
            let at = t0 + AFTER / 2 * step;
            let moving = partition(1, false, Some(i64::from(step)), 100);
            let caught_up = partition(2, false, Some(7), 7);
            assert_eq!(judge.judge(at, &[moving, caught_up]), Verdict::Flowing);
        }
    }

    #[test]
    fn while_one_of_ours_stands_still_too_a_dependency_is_down_and_nobody_rejoins() {
        let mut judge = Judge::new(AFTER);
        let t0 = Instant::now();
        let seen = [
            partition(0, true, Some(1), 9),
            partition(1, false, Some(1), 9),
        ];
        judge.judge(t0, &seen);
        assert_eq!(judge.judge(t0 + AFTER * 3, &seen), Verdict::Waiting);
    }

    #[test]
    fn rejoins_that_do_not_help_are_spaced_out_doubling_and_reset_once_it_flows() {
        let mut judge = Judge::new(AFTER);
        let t0 = Instant::now();
        let stuck = [partition(1, false, Some(1), 9)];
        let step = AFTER / 4;
        let rejoins: Vec<u32> = (0..80u32)
            .filter(|i| matches!(judge.judge(t0 + step * *i, &stuck), Verdict::Rejoin(_)))
            .collect();
        // Looks every quarter wait: the first rejoin after one wait, then 1, 2, 4 and 8 waits apart.
        assert_eq!(rejoins, vec![4, 8, 16, 32, 64]);

        let flowing = [partition(1, false, Some(9), 9)];
        let later = t0 + step * 81;
        assert_eq!(judge.judge(later, &flowing), Verdict::Flowing);
        judge.judge(later + step, &stuck);
        assert_eq!(
            judge.judge(later + step + AFTER, &stuck),
            Verdict::Rejoin(vec![1])
        );
    }
}
