//! A lane: the task that handles one partition's messages in order, storing each offset after
//! its handler returned; a handler that takes batches gets what is queued at once, up to its
//! [`Handler::batch_limit`]. The receiving loop never waits for a lane: it queues the message and
//! goes on, so a lane that is slow or retrying holds back only its own partition. Back-pressure
//! is per partition too: a lane holding [`PAUSE_AT`] messages (queued or being handled) has its
//! partition paused at the broker until it is down to [`RESUME_AT`]. librdkafka keeps the
//! position across a pause: a resumed partition fetches from the message after the last one
//! received, so nothing is skipped or received twice.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rdkafka::consumer::Consumer as _;
use rdkafka::message::OwnedMessage;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::{mpsc, watch};

use super::{Consumer, Handler};
use crate::Error;

/// Messages queued in a lane at which its partition is paused.
const PAUSE_AT: usize = 64;
/// Messages queued in a lane at which its paused partition is resumed.
const RESUME_AT: usize = 16;

/// A message and the generation of its partition's assignment when it was received.
struct Queued {
    message: OwnedMessage,
    generation: u64,
}

/// What the lane and the receiving loop share.
struct Shared {
    consumer: Arc<Consumer>,
    partition: i32,
    generation: Arc<AtomicU64>,
    queued: AtomicUsize,
    /// Whether the partition is paused at the broker; its lock keeps a pause and a resume from
    /// crossing.
    paused: Mutex<bool>,
}

impl Shared {
    /// Pauses the partition at the broker when the lane reaches its pause mark (`pause`), or
    /// lets it fetch again once the lane is down to its resume mark; counted under the lock.
    fn set_paused(&self, pause: bool) {
        let mut paused = self.paused.lock().unwrap_or_else(PoisonError::into_inner);
        let queued = self.queued.load(Ordering::SeqCst);
        let wanted = if pause {
            *paused || queued >= PAUSE_AT
        } else {
            *paused && queued > RESUME_AT
        };
        if *paused == wanted {
            return;
        }
        let consumer = &self.consumer;
        let mut partitions = TopicPartitionList::new();
        if partitions
            .add_partition_offset(&consumer.topic, self.partition, Offset::Invalid)
            .is_err()
        {
            return;
        }
        let result = if wanted {
            consumer.inner.pause(&partitions)
        } else {
            consumer.inner.resume(&partitions)
        };
        match result {
            Ok(()) => *paused = wanted,
            Err(error) => tracing::warn!(
                topic = %consumer.topic,
                partition = self.partition,
                %error,
                "pause or resume failed"
            ),
        }
    }
}

/// The receiving loop's end of a lane.
pub(super) struct LaneSender {
    shared: Arc<Shared>,
    sender: mpsc::UnboundedSender<Queued>,
}

impl LaneSender {
    /// Queues `message` with its partition's current generation; pauses the partition when the
    /// lane is full. `Err` when the lane has ended (it reports why when joined).
    pub(super) fn queue(&self, message: OwnedMessage) -> Result<(), ()> {
        let generation = self.shared.generation.load(Ordering::SeqCst);
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if self
            .sender
            .send(Queued {
                message,
                generation,
            })
            .is_err()
        {
            return Err(());
        }
        self.shared.set_paused(true);
        Ok(())
    }
}

/// Starts the lane of `partition`; answers its sender and the task to run.
pub(super) fn start<H: Handler + 'static>(
    consumer: &Arc<Consumer>,
    handler: &Arc<H>,
    partition: i32,
    stopped: watch::Receiver<bool>,
) -> (
    LaneSender,
    impl Future<Output = Result<(), Error>> + Send + 'static,
) {
    let shared = Arc::new(Shared {
        consumer: Arc::clone(consumer),
        partition,
        generation: consumer.inner.context().generation(partition),
        queued: AtomicUsize::new(0),
        paused: Mutex::new(false),
    });
    let (sender, queue) = mpsc::unbounded_channel();
    let lane = Lane {
        shared: Arc::clone(&shared),
        handler: Arc::clone(handler),
        stopped,
    };
    (LaneSender { shared, sender }, lane.run(queue))
}

struct Lane<H> {
    shared: Arc<Shared>,
    handler: Arc<H>,
    stopped: watch::Receiver<bool>,
}

impl<H: Handler> Lane<H> {
    async fn run(mut self, mut queue: mpsc::UnboundedReceiver<Queued>) -> Result<(), Error> {
        let limit = self.handler.batch_limit().max(1);
        let mut batch = Vec::with_capacity(limit);
        loop {
            let first = tokio::select! {
                biased;
                _ = self.stopped.wait_for(|stopped| *stopped) => return Ok(()),
                queued = queue.recv() => match queued {
                    Some(queued) => queued,
                    None => return Ok(()),
                },
            };
            // What else is queued already joins the batch; nothing is waited for.
            batch.push(first);
            while batch.len() < limit {
                match queue.try_recv() {
                    Ok(queued) => batch.push(queued),
                    Err(_) => break,
                }
            }
            let taken = batch.len();
            // Revoked since they were received: the partition's new owner applies them.
            let generation = self.shared.generation.load(Ordering::SeqCst);
            let messages: Vec<OwnedMessage> = batch
                .drain(..)
                .filter(|queued| queued.generation == generation)
                .map(|queued| queued.message)
                .collect();
            let shared = &self.shared;
            let still_ours = || shared.generation.load(Ordering::SeqCst) == generation;
            let done = messages.is_empty()
                || shared
                    .consumer
                    .handle_all_until_done(&*self.handler, &messages, &mut self.stopped, still_ours)
                    .await?;
            // Counted until handled, so a lane holds at most its pause mark, in hand or queued.
            shared.queued.fetch_sub(taken, Ordering::SeqCst);
            shared.set_paused(false);
            if !done {
                return Ok(());
            }
        }
    }
}
