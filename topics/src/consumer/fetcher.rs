//! Waking librdkafka's fetcher after a resume. librdkafka applies a pause or resume on its main
//! thread and wakes nobody: a resumed partition is fetched when the thread of its leader's
//! connection next looks, which, with every partition of the consumer paused and so no fetch in
//! flight, is up to a second later. Any request to that broker wakes its thread, and the
//! cheapest one the client API can send is a watermark query (ListOffsets): after each resume
//! one is sent from a blocking task, one at a time, for the partitions resumed meanwhile.

use std::collections::BTreeSet;
use std::mem;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rdkafka::consumer::Consumer as _;
use tokio::sync::{Notify, watch};

use super::Consumer;
use crate::Error;

/// How long a wake-up's query may wait for its answer (a broker that is down).
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The partitions resumed since the fetcher was last woken.
#[derive(Debug, Default)]
pub(super) struct Resumed {
    partitions: Mutex<BTreeSet<i32>>,
    due: Notify,
}

impl Resumed {
    /// `partition` was resumed: its leader's thread should look at it now.
    pub(super) fn note(&self, partition: i32) {
        self.lock().insert(partition);
        self.due.notify_one();
    }

    fn take(&self) -> BTreeSet<i32> {
        mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<i32>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wakes the fetcher for each resume, until the consumer stops.
pub(super) async fn wake_after_resumes(
    consumer: Arc<Consumer>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), Error> {
    loop {
        tokio::select! {
            _ = stopped.wait_for(|stopped| *stopped) => return Ok(()),
            () = consumer.resumed.due.notified() => {}
        }
        let partitions = consumer.resumed.take();
        let querying = Arc::clone(&consumer);
        let queried = tokio::task::spawn_blocking(move || {
            for partition in partitions {
                // The answer does not matter: sending the request wakes the thread.
                let _ = querying
                    .inner
                    .fetch_watermarks(&querying.topic, partition, QUERY_TIMEOUT);
            }
        })
        .await;
        if let Err(panicked) = queried {
            return Err(Error::Fatal(format!("fetcher wake-up: {panicked}")));
        }
    }
}
