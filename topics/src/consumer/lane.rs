//! A lane: the task that handles one partition's messages in order, storing each offset after
//! its handler returned; a handler that takes batches gets what is queued at once, up to its
//! [`Handler::batch_limit`]. The receiving loop never waits for a lane: it queues the message and
//! goes on, so a lane that is slow or retrying holds back only its own partition. Back-pressure
//! is per partition too: a lane holding [`PAUSE_AT`] messages or [`PAUSE_AT_BYTES`] (queued or
//! being handled) has its partition paused at the broker until it is down to [`RESUME_AT`] and
//! [`RESUME_AT_BYTES`]. librdkafka keeps the position across a pause: a resumed partition
//! fetches from the message after the last one received, so nothing is skipped or received
//! twice.
//!
//! A resumed partition's next fetch can wait up to a second (librdkafka's broker thread notices
//! the resume on its next wake-up, and a pause drops what it had fetched ahead), so the marks
//! are far apart: what is left at the resume mark keeps the lane busy through that gap. With
//! marks of 64 and 16 a backlog drained at 64 messages a partition a second, whatever the
//! handler's pace (BENCHMARKS.md, "Outbound webhooks").

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rdkafka::consumer::Consumer as _;
use rdkafka::message::{Message as _, OwnedMessage};
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::{mpsc, watch};

use super::{Consumer, Handler};
use crate::Error;

/// Messages queued in a lane at which its partition is paused.
const PAUSE_AT: usize = 1024;
/// Messages queued in a lane at which its paused partition is resumed.
const RESUME_AT: usize = 512;
/// Bytes (keys and payloads) queued in a lane at which its partition is paused: large messages
/// (a vendor webhook's body) pause it before the count does.
const PAUSE_AT_BYTES: usize = 8 << 20;
/// Bytes queued in a lane at which its paused partition is resumed.
const RESUME_AT_BYTES: usize = 4 << 20;

/// A message and the generation of its partition's assignment when it was received.
struct Queued {
    message: OwnedMessage,
    generation: u64,
}

/// What a message weighs against the lane's byte marks.
fn weight(message: &OwnedMessage) -> usize {
    message.payload().map_or(0, <[u8]>::len) + message.key().map_or(0, <[u8]>::len)
}

/// What the lane and the receiving loop share.
struct Shared {
    consumer: Arc<Consumer>,
    partition: i32,
    generation: Arc<AtomicU64>,
    queued: AtomicUsize,
    queued_bytes: AtomicUsize,
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
        let bytes = self.queued_bytes.load(Ordering::SeqCst);
        let wanted = if pause {
            *paused || queued >= PAUSE_AT || bytes >= PAUSE_AT_BYTES
        } else {
            *paused && (queued > RESUME_AT || bytes > RESUME_AT_BYTES)
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
        self.shared
            .queued_bytes
            .fetch_add(weight(&message), Ordering::SeqCst);
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
        queued_bytes: AtomicUsize::new(0),
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
        let linger = self.handler.batch_linger();
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
            // What else is queued already joins the batch, and what arrives within the
            // handler's linger after the first.
            batch.push(first);
            let lingered = tokio::time::Instant::now() + linger;
            while batch.len() < limit {
                match queue.try_recv() {
                    Ok(queued) => batch.push(queued),
                    Err(_) if linger.is_zero() => break,
                    Err(_) => tokio::select! {
                        biased;
                        _ = self.stopped.wait_for(|stopped| *stopped) => break,
                        queued = queue.recv() => match queued {
                            Some(queued) => batch.push(queued),
                            None => break,
                        },
                        () = tokio::time::sleep_until(lingered) => break,
                    },
                }
            }
            let taken = batch.len();
            let taken_bytes: usize = batch.iter().map(|queued| weight(&queued.message)).sum();
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
            shared.queued_bytes.fetch_sub(taken_bytes, Ordering::SeqCst);
            shared.set_paused(false);
            if !done {
                return Ok(());
            }
        }
    }
}
