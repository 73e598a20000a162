//! Waking librdkafka's fetcher after a resume. librdkafka applies a pause or resume on its main
//! thread and wakes nobody: a resumed partition is fetched when the thread of its leader's
//! connection next looks, which, with every partition of the consumer paused and so no fetch in
//! flight, is up to a second later. Any request to that broker wakes its thread, and the
//! cheapest one the client API can send is a watermark query (ListOffsets), sent from a
//! blocking task, one at a time, for the partitions resumed meanwhile.
//!
//! A query is sent at once only when nothing else of the consumer is fetching. Otherwise the
//! thread is busy with a fetch and takes the resumed partition into the next one; and tansu
//! answers a connection's requests in order, so a query would queue between two fetches and
//! delay the next (sent after every resume, it tripled the install route's median at 500/s:
//! BENCHMARKS.md, "Wake-ups"). A partition that has delivered nothing [`GRACE`] after its
//! resume (the fetches under way ended just as it came) gets its query then.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;
use tokio::sync::{Notify, watch};

use super::Consumer;
use crate::Error;

/// How long a wake-up's query may wait for its answer (a broker that is down).
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a resumed partition may wait for a fetch under way before it gets its query:
/// several fetch waits of the fastest consumers, with room for a busy broker.
const GRACE: Duration = Duration::from_millis(50);

/// The partitions resumed and not fetched from since, with when they were resumed.
#[derive(Debug, Default)]
pub(super) struct Resumed {
    waiting: Mutex<HashMap<i32, Instant>>,
    /// Whether `waiting` may be non-empty: the receiving loop looks at it for every message.
    any: AtomicBool,
    due: Notify,
}

impl Resumed {
    /// `partition` was resumed: its leader's thread should look at it now.
    pub(super) fn note(&self, partition: i32) {
        self.lock().entry(partition).or_insert_with(Instant::now);
        self.any.store(true, Ordering::SeqCst);
        self.due.notify_one();
    }

    /// A message of `partition` was received: it is being fetched and needs no wake-up. (Not
    /// its end: librdkafka may report an end reached before the resume.)
    pub(super) fn fetched(&self, partition: i32) {
        if self.any.load(Ordering::SeqCst) {
            let mut waiting = self.lock();
            waiting.remove(&partition);
            self.any.store(!waiting.is_empty(), Ordering::SeqCst);
        }
    }

    /// Takes the partitions to query now (`at_once`: every one; else those past [`GRACE`]);
    /// `Err` with the earliest moment one will be due, when none is yet; `Ok` empty when none
    /// waits.
    fn take_due(&self, now: Instant, at_once: bool) -> Result<BTreeSet<i32>, Instant> {
        let mut waiting = self.lock();
        let due: BTreeSet<i32> = waiting
            .iter()
            .filter(|(_, resumed)| at_once || now.saturating_duration_since(**resumed) >= GRACE)
            .map(|(&partition, _)| partition)
            .collect();
        if due.is_empty()
            && let Some(earliest) = waiting.values().min()
        {
            return Err(*earliest + GRACE);
        }
        for partition in &due {
            waiting.remove(partition);
        }
        self.any.store(!waiting.is_empty(), Ordering::SeqCst);
        Ok(due)
    }

    fn waiting(&self) -> BTreeSet<i32> {
        self.lock().keys().copied().collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<i32, Instant>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wakes the fetcher for resumed partitions, until the consumer stops.
pub(super) async fn wake_after_resumes(
    consumer: Arc<Consumer>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), Error> {
    loop {
        tokio::select! {
            _ = stopped.wait_for(|stopped| *stopped) => return Ok(()),
            () = consumer.resumed.due.notified() => {}
        }
        loop {
            let at_once = !others_fetching(&consumer, &consumer.resumed.waiting());
            match consumer.resumed.take_due(Instant::now(), at_once) {
                Ok(due) if due.is_empty() => break,
                Ok(due) => query(&consumer, due).await?,
                Err(due_at) => tokio::select! {
                    _ = stopped.wait_for(|stopped| *stopped) => return Ok(()),
                    () = tokio::time::sleep_until(due_at.into()) => {}
                    () = consumer.resumed.due.notified() => {}
                },
            }
        }
    }
}

/// Sends a watermark query for each of `partitions`, one at a time.
async fn query(consumer: &Arc<Consumer>, partitions: BTreeSet<i32>) -> Result<(), Error> {
    let querying = Arc::clone(consumer);
    tokio::task::spawn_blocking(move || {
        for partition in partitions {
            // The answer does not matter: sending the request wakes the thread.
            let _ = querying
                .inner
                .fetch_watermarks(&querying.topic, partition, QUERY_TIMEOUT);
        }
    })
    .await
    .map_err(|panicked| Error::Fatal(format!("fetcher wake-up: {panicked}")))
}

/// Whether a partition assigned to `consumer` other than `resumed` is fetching, so its broker
/// thread is awake; `false` when the assignment cannot be read (a query is harmless).
fn others_fetching(consumer: &Consumer, resumed: &BTreeSet<i32>) -> bool {
    let Ok(assignment) = consumer.inner.assignment() else {
        return false;
    };
    let assigned: Vec<i32> = assignment
        .elements_for_topic(&consumer.topic)
        .iter()
        .map(|element| element.partition())
        .collect();
    consumer.pauses.any_fetching(&assigned, resumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_partition_is_due_at_once_when_nothing_fetches_else_after_the_grace() {
        let resumed = Resumed::default();
        let start = Instant::now();
        resumed.note(0);
        assert_eq!(
            resumed.take_due(start, false),
            Err(resumed.lock()[&0] + GRACE)
        );
        assert_eq!(
            resumed.take_due(start + GRACE * 2, false),
            Ok(BTreeSet::from([0]))
        );
        assert_eq!(resumed.take_due(start, true), Ok(BTreeSet::new()));
        resumed.note(1);
        assert_eq!(resumed.take_due(start, true), Ok(BTreeSet::from([1])));
    }

    #[test]
    fn a_partition_fetched_from_needs_no_wake_up() {
        let resumed = Resumed::default();
        resumed.note(0);
        resumed.note(1);
        resumed.fetched(0);
        let later = Instant::now() + GRACE * 2;
        assert_eq!(resumed.take_due(later, false), Ok(BTreeSet::from([1])));
        assert!(!resumed.any.load(Ordering::SeqCst));
    }
}
