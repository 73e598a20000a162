//! Waking librdkafka's fetcher after a resume. librdkafka applies a pause or resume on its main
//! thread and wakes nobody: a resumed partition is fetched when the thread of its leader's
//! connection next looks, which, with every partition of the consumer paused and so no fetch in
//! flight, is up to a second later. Any request to that broker wakes its thread, and the
//! cheapest one the client API can send is a watermark query (ListOffsets), sent from a
//! blocking task for one of the partitions resumed meanwhile: every partition of a consumer
//! of the stack's one broker is served by the same thread. (With several brokers, resumed
//! partitions another broker leads are fetched when its thread next looks, within a second.)
//!
//! Only when nothing else of the consumer is fetching (unpaused), or for a message announced in
//! a partition the safety poll resumed and nothing was fetched from since (`wake_for`).
//! Otherwise the thread is normally busy with a fetch and takes the resumed partitions into the
//! next one; and tansu answers a connection's requests in order, so a query would queue between
//! two fetches and delay the next (sent after every resume, it tripled the install route's
//! median at 500/s; sent after 50 ms without a message, it made the broker fall behind:
//! BENCHMARKS.md, "Wake-ups"). One case is left to librdkafka's own look, within a second: a
//! lane's backlog resumed just after a safety poll resumed the other partitions, which count
//! as fetching before librdkafka has looked at them.
//!
//! Resumes come from idleness (with wake-ups) and from the lanes' back-pressure (with or
//! without them): the thread sleeps the same way after either.

use std::collections::BTreeSet;
use std::mem;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rdkafka::consumer::Consumer as _;
use tokio::sync::{Notify, watch};

use super::Consumer;
use crate::Error;

/// How long a wake-up's query may wait for its answer (a broker that is down).
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The partitions resumed since the fetcher last looked.
#[derive(Debug, Default)]
pub(super) struct Resumed {
    partitions: Mutex<Waiting>,
    due: Notify,
}

#[derive(Debug, Default)]
struct Waiting {
    partitions: BTreeSet<i32>,
    /// Woken whatever else seems to fetch (`wake_for`).
    forced: bool,
}

impl Resumed {
    /// `partition` was resumed: its leader's thread should look at it now.
    pub(super) fn note(&self, partition: i32) {
        self.lock().partitions.insert(partition);
        self.due.notify_one();
    }

    /// A message waits in `partition`, which the safety poll resumed and librdkafka has not
    /// fetched since: its thread is woken though other partitions seem to fetch (those the
    /// same poll resumed, which it has not looked at either).
    pub(super) fn wake_for(&self, partition: i32) {
        let mut waiting = self.lock();
        waiting.partitions.insert(partition);
        waiting.forced = true;
        drop(waiting);
        self.due.notify_one();
    }

    fn take(&self) -> Waiting {
        mem::take(&mut *self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
        let waiting = consumer.resumed.take();
        let Some(&partition) = waiting.partitions.first() else {
            continue;
        };
        let querying = Arc::clone(&consumer);
        // Reading the assignment waits on librdkafka's main thread, so it is blocking too.
        let woken = tokio::task::spawn_blocking(move || {
            if waiting.forced || !others_fetching(&querying, &waiting.partitions) {
                // The answer does not matter: sending the request wakes the thread.
                let _ = querying
                    .inner
                    .fetch_watermarks(&querying.topic, partition, QUERY_TIMEOUT);
            }
        });
        tokio::select! {
            // Not held up by a broker that does not answer.
            _ = stopped.wait_for(|stopped| *stopped) => return Ok(()),
            woken = woken => {
                woken.map_err(|panicked| Error::Fatal(format!("fetcher wake-up: {panicked}")))?;
            }
        }
    }
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
