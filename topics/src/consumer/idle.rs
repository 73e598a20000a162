//! Idle partitions: which of a consumer's partitions to leave paused at the broker because they
//! were read to their end and nothing was announced beyond it ([`crate::wakeups`]), and when to
//! resume them. Decisions only; the loop applies them (`pause.rs`).
//!
//! - Paused when librdkafka reports the partition's end (`PartitionEOF`, once per end reached),
//!   unless the wake-up subscription is down or a message beyond what was received has been
//!   announced (it is on its way).
//! - Resumed when a message is announced at or beyond what was received, when a message of it
//!   is received after all (one fetched before the pause took effect), when the subscription
//!   goes down, and every [`SAFETY_POLL`] whatever was heard. A resumed partition fetches until
//!   it reaches its end again, so what it holds is delivered before it can pause: pausing costs
//!   latency at worst, never a message.

use std::collections::HashMap;
use std::time::Duration;

/// How often a paused partition is resumed though nothing was announced: the longest a message
/// waits whose announcement was lost, or whose producer does not announce.
pub(super) const SAFETY_POLL: Duration = Duration::from_secs(1);

/// A partition to pause (`true`) or resume (`false`) as idle.
pub(super) type Change = (i32, bool);

/// What the loop knows of each partition it has heard of.
#[derive(Debug, Default)]
pub(super) struct Idle {
    /// Whether announcements can be heard (the subscription is up).
    live: bool,
    partitions: HashMap<i32, Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// The offset after the last message received.
    received_end: Option<i64>,
    /// The newest offset announced.
    announced: Option<i64>,
    /// librdkafka reported the end after the last message received.
    at_end: bool,
    /// Paused as idle.
    paused: bool,
    /// Resumed by the safety poll and nothing fetched since: librdkafka may not be looking.
    polled: bool,
}

impl Seen {
    /// A message announced here has not been received yet.
    fn awaits_announced(&self) -> bool {
        match (self.announced, self.received_end) {
            (Some(announced), Some(end)) => announced >= end,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    fn set_paused(&mut self, partition: i32, paused: bool) -> Option<Change> {
        (self.paused != paused).then(|| {
            self.paused = paused;
            (partition, paused)
        })
    }
}

impl Idle {
    /// The message at `offset` of `partition` was received.
    pub(super) fn received(&mut self, partition: i32, offset: i64) -> Option<Change> {
        let seen = self.partitions.entry(partition).or_default();
        seen.received_end = Some(offset + 1);
        seen.at_end = false;
        seen.polled = false;
        seen.set_paused(partition, false)
    }

    /// librdkafka reports `partition` read to its end.
    pub(super) fn reached_end(&mut self, partition: i32) -> Option<Change> {
        let live = self.live;
        let seen = self.partitions.entry(partition).or_default();
        seen.at_end = true;
        seen.polled = false;
        if live && !seen.awaits_announced() {
            seen.set_paused(partition, true)
        } else {
            None
        }
    }

    /// What the subscription heard: whether it is up, the newest offset announced per partition.
    pub(super) fn heard(&mut self, live: bool, announced: &HashMap<i32, i64>) -> Vec<Change> {
        let mut changes = Vec::new();
        for (&partition, &offset) in announced {
            let seen = self.partitions.entry(partition).or_default();
            seen.announced = Some(seen.announced.map_or(offset, |known| known.max(offset)));
            if seen.awaits_announced() {
                changes.extend(seen.set_paused(partition, false));
            }
        }
        if live != self.live {
            self.live = live;
            for (&partition, seen) in &mut self.partitions {
                // Down: nothing could wake a paused partition. Up: those at their end may rest.
                let pause = live && seen.at_end && !seen.awaits_announced();
                changes.extend(seen.set_paused(partition, pause));
            }
        }
        changes
    }

    /// The partitions of `announced` whose announced message has not been received, which the
    /// safety poll resumed and which have fetched nothing since: no resume woke librdkafka for
    /// them (a wake-up per poll would cost the broker a fifth of a core at rest), and it may
    /// not look for a second.
    pub(super) fn polled_awaiting<'a>(
        &'a self,
        announced: &'a HashMap<i32, i64>,
    ) -> impl Iterator<Item = i32> + 'a {
        announced.keys().copied().filter(|partition| {
            self.partitions
                .get(partition)
                .is_some_and(|seen| seen.polled && seen.awaits_announced())
        })
    }

    /// Every [`SAFETY_POLL`]: each paused partition fetches again until its end.
    pub(super) fn safety_poll(&mut self) -> Vec<Change> {
        self.partitions
            .iter_mut()
            .filter_map(|(&partition, seen)| {
                seen.at_end = false;
                seen.polled |= seen.paused;
                seen.set_paused(partition, false)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Idle {
        let mut idle = Idle::default();
        assert!(idle.heard(true, &HashMap::new()).is_empty());
        idle
    }

    #[test]
    fn a_partition_read_to_its_end_pauses_and_an_announcement_resumes_it() {
        let mut idle = live();
        assert_eq!(idle.received(0, 9), None);
        assert_eq!(idle.reached_end(0), Some((0, true)));
        assert_eq!(idle.reached_end(0), None, "already paused");
        assert_eq!(
            idle.heard(true, &HashMap::from([(0, 10)])),
            vec![(0, false)]
        );
    }

    #[test]
    fn an_announcement_of_what_was_received_leaves_it_paused() {
        let mut idle = live();
        idle.received(0, 9);
        idle.reached_end(0);
        assert!(idle.heard(true, &HashMap::from([(0, 9)])).is_empty());
    }

    #[test]
    fn an_end_reached_before_an_announced_message_arrived_does_not_pause() {
        let mut idle = live();
        idle.received(0, 9);
        idle.heard(true, &HashMap::from([(0, 10)]));
        assert_eq!(idle.reached_end(0), None);
        assert_eq!(idle.received(0, 10), None);
        assert_eq!(idle.reached_end(0), Some((0, true)));
    }

    #[test]
    fn an_announcement_for_a_partition_the_safety_poll_resumed_is_awaited_there() {
        let mut idle = live();
        for partition in 0..3 {
            idle.received(partition, 9);
            idle.reached_end(partition);
        }
        idle.received(3, 9);
        assert_eq!(idle.safety_poll().len(), 3);
        let announced = HashMap::from([(0, 10), (1, 9), (2, 10), (3, 10)]);
        assert!(idle.heard(true, &announced).is_empty(), "none is paused");
        // 1: nothing new; 3: never paused, so librdkafka is looking.
        let mut awaiting: Vec<i32> = idle.polled_awaiting(&announced).collect();
        awaiting.sort_unstable();
        assert_eq!(awaiting, vec![0, 2]);
        // 2 fetched since the poll (its end): librdkafka is looking.
        idle.reached_end(2);
        assert_eq!(
            idle.polled_awaiting(&announced).collect::<Vec<_>>(),
            vec![0]
        );
        idle.received(0, 10);
        assert_eq!(idle.polled_awaiting(&announced).count(), 0);
    }

    #[test]
    fn nothing_pauses_while_the_subscription_is_down() {
        let mut idle = Idle::default();
        idle.received(0, 1);
        assert_eq!(idle.reached_end(0), None);
        // Up again: the partition at its end may rest now.
        assert_eq!(idle.heard(true, &HashMap::new()), vec![(0, true)]);
        // Down: every paused partition fetches again.
        assert_eq!(idle.heard(false, &HashMap::new()), vec![(0, false)]);
        assert_eq!(idle.reached_end(0), None);
    }

    #[test]
    fn a_partition_never_received_from_pauses_unless_something_was_announced() {
        let mut idle = live();
        assert_eq!(idle.reached_end(1), Some((1, true)));
        let mut idle = live();
        idle.heard(true, &HashMap::from([(2, 0)]));
        assert_eq!(idle.reached_end(2), None);
    }

    #[test]
    fn a_message_received_while_paused_resumes_the_partition() {
        let mut idle = live();
        idle.reached_end(0);
        assert_eq!(idle.received(0, 3), Some((0, false)));
    }

    #[test]
    fn the_safety_poll_resumes_every_paused_partition_until_its_end_again() {
        let mut idle = live();
        idle.reached_end(0);
        idle.reached_end(1);
        idle.received(2, 5);
        let mut resumed = idle.safety_poll();
        resumed.sort_unstable();
        assert_eq!(resumed, vec![(0, false), (1, false)]);
        assert!(idle.safety_poll().is_empty());
        // Back from the subscription's point of view: not at the end until told so again.
        idle.heard(false, &HashMap::new());
        assert!(idle.heard(true, &HashMap::new()).is_empty());
        assert_eq!(idle.reached_end(0), Some((0, true)));
    }
}
