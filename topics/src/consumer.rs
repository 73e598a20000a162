//! The consumer loop. A message's offset is stored only after its handler returned, that is
//! after the handler's effect is committed. Each partition has its own `lane`, a task that
//! handles the partition's messages one after another, so offsets advance in order per
//! partition and a crash redelivers from the first unfinished message; partitions are handled
//! concurrently, and one slow or retrying message holds back only its own partition. A lane
//! drops what it queued for a partition that was revoked meanwhile (`assignment`), so a key
//! has a single writer except for the message (or batch) a lane was already handling at the
//! revocation.
//! Handlers must be idempotent (the pipeline's inbox makes them so, and serialises even that
//! overlap). A handler may take a partition's queued messages as a batch, one effect for all
//! ([`Handler::handle_batch`]: group commits); a failed batch is split into single messages, so
//! failures below are still each message's own.
//!
//! A failure says what it means for the message ([`HandleError`]): one that the message itself
//! causes is retried a bounded number of times ([`RetryPolicy`]) and then dead-lettered, so one
//! bad message cannot stall its partition forever; a dependency that is down is waited for
//! without a bound, because every message would fail the same way and dead-lettering them would
//! drop the whole backlog. Every dead-lettered message is handed back to the handler
//! ([`Handler::dead_lettered`]) so whoever waits for it hears so at once.
//!
//! Beside the lanes' back-pressure (a lane holding too many messages pauses its partition at the
//! broker) nothing is paused: Apache Kafka answers a fetch as soon as one of its partitions has
//! data (`fetch.min.bytes` 1), so an idle consumer costs the broker one waiting request per
//! [`FETCH_WAIT`], and a message is handled within milliseconds of its acknowledgement.

mod assignment;
mod lane;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use backon::{BackoffBuilder, ExponentialBuilder};
use rdkafka::consumer::{CommitMode, Consumer as _, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message as _, OwnedMessage};
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::assignment::Assignment;

use crate::{Cluster, Error, Producer, catalogue};

/// How long the broker may hold a fetch that finds no data: it answers as soon as data arrives,
/// so this bounds only an idle wait, and what a partition resumed (a lane's back-pressure
/// lifted) or newly assigned during it waits to be fetched, when the broker's other
/// partitions are idle: up to a second, as a resume could wait already (see `lane`). At
/// 100 ms a pipeline's twelve idle consumers made 120 fetches a second, most of what it and
/// the broker spent at rest; at 500 ms still 24 (BENCHMARKS.md "Twice the webhooks": at
/// rest).
pub const FETCH_WAIT: Duration = Duration::from_secs(1);

/// What a handler's failure means for the message.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// Applying this message failed in a way another attempt may fix (a serialisation conflict,
    /// a deadlock, a timeout): retried with backoff before any later message of the partition,
    /// up to the policy's attempts, then dead-lettered.
    #[error("retryable: {0}")]
    Retryable(String),
    /// A dependency did not answer (database, broker or Redis unreachable): nothing is wrong
    /// with the message, so it is retried with backoff until the dependency is back.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The message can never be applied (undecodable, invalid): it goes to the dead-letter
    /// topic with the reason, and the loop moves on.
    #[error("poison: {0}")]
    Poison(String),
    /// The process cannot go on (configuration, lost invariant): the loop stops.
    #[error("fatal: {0}")]
    Fatal(String),
}

/// One message handed to a handler.
#[derive(Debug)]
pub struct Delivery<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub payload: &'a [u8],
    /// Attempts so far, counting this one (1 on first delivery in this process).
    pub attempt: u32,
    message: &'a OwnedMessage,
}

impl<'a> Delivery<'a> {
    fn of(message: &'a OwnedMessage, attempt: u32) -> Self {
        Delivery {
            topic: message.topic(),
            partition: message.partition(),
            offset: message.offset(),
            key: message.key(),
            payload: message.payload().unwrap_or_default(),
            attempt,
            message,
        }
    }

    /// A header's value, when present.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.message
            .headers()?
            .iter()
            .find(|h| h.key == name)
            .and_then(|h| h.value)
    }
}

/// Applies one message. Returning `Ok` means its effect is durable.
#[async_trait]
pub trait Handler: Send + Sync {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError>;

    /// Up to how many queued messages of one partition [`Handler::handle_batch`] takes at once;
    /// 1 (the default) hands every message to [`Handler::handle`] alone.
    fn batch_limit(&self) -> usize {
        1
    }

    /// How long a batch that is not full waits for more messages of its partition after its
    /// first one arrived: zero (the default) takes only what is queued already. A handler
    /// whose cost is per batch more than per message (one statement per table for the whole
    /// batch, one commit) trades this much latency for fewer, larger batches.
    fn batch_linger(&self) -> Duration {
        Duration::ZERO
    }

    /// Applies consecutive messages of one partition, in offset order, so that `Ok` means every
    /// one's effect is durable (one transaction for all: a group commit). Only what is already
    /// queued is batched, so a batch never waits for more. When a batch fails (other than
    /// fatally) its messages are handed to [`Handler::handle`] one at a time, retried and
    /// dead-lettered alone: a batch may have applied part of itself before failing, which
    /// idempotent handlers make harmless.
    async fn handle_batch(&self, deliveries: &[Delivery<'_>]) -> Result<(), HandleError> {
        for delivery in deliveries {
            self.handle(delivery).await?;
        }
        Ok(())
    }

    /// `delivery` is on the dead-letter topic because of `reason`: tell whoever waits for it.
    /// Called before its offset is stored, so it runs again after a crash; a retryable or
    /// unavailable failure is retried.
    async fn dead_lettered(
        &self,
        _delivery: &Delivery<'_>,
        _reason: &str,
    ) -> Result<(), HandleError> {
        Ok(())
    }
}

/// What became of a message handed to its handler until done.
enum Handled {
    /// Applied, or dead-lettered: its offset may be stored.
    Done,
    /// Its partition moved to another consumer while it was being retried.
    Revoked,
    /// Shutdown came first.
    Stopped,
}

impl Handled {
    /// `dead_letter`'s answer: parked and reported, or shutdown first.
    fn from_dead_letter(parked: bool) -> Self {
        if parked {
            Handled::Done
        } else {
            Handled::Stopped
        }
    }
}

/// How a failure caused by the message itself ([`HandleError::Retryable`]) is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; then the message is dead-lettered.
    pub attempts: u32,
    /// The delay after the first failure, doubling (with jitter) up to `max_delay`.
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Ten attempts over about a minute.
    fn default() -> Self {
        Self {
            attempts: 10,
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    fn delays(&self) -> impl Iterator<Item = Duration> + use<> {
        ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_jitter()
            .without_max_times()
            .build()
    }
}

/// Where and as whom to consume.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub cluster: Cluster,
    pub group_id: String,
    pub topic: String,
    pub client_id: String,
    /// How often stored offsets are committed to the broker.
    pub commit_interval: Duration,
    pub retry: RetryPolicy,
    /// This member's name in the group when it is static (`group.instance.id`, KIP-345): a
    /// member that restarts under the same name takes its partitions back at once, where a
    /// new member waits until the group has given up on the dead one (the 6 s session). It
    /// must be unique in the group and survive restarts (a StatefulSet pod's name); the
    /// broker fences the older of two members that share it. `None`: a dynamic member.
    pub instance_id: Option<String>,
}

/// A consumer of one topic in one group, with the producer its dead letters go out on.
pub struct Consumer {
    inner: StreamConsumer<Assignment>,
    dead_letters: Producer,
    topic: String,
    retry: RetryPolicy,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// A consumer as `options` say, dead-lettering through `dead_letters`: a process's consumers
    /// share one producer (each librdkafka producer keeps a polling thread that wakes ten times
    /// a second, idle or not).
    pub fn new(options: &ConsumerOptions, dead_letters: Producer) -> Result<Self, Error> {
        let mut config = options.cluster.client_config(&options.client_id);
        config
            .set("group.id", &options.group_id)
            .set("enable.auto.commit", "true")
            .set(
                "auto.commit.interval.ms",
                options.commit_interval.as_millis().to_string(),
            )
            // Offsets are stored by the loop, after the effect, never by librdkafka on receipt.
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            // Answered as soon as one byte is there: a message is handed on when it lands.
            .set("fetch.min.bytes", "1")
            .set("fetch.wait.max.ms", FETCH_WAIT.as_millis().to_string())
            // No producer of ours is transactional: nothing to wait for past the high watermark.
            .set("isolation.level", "read_uncommitted")
            // The classic group protocol with the cooperative assignor: a member joining or
            // leaving moves only the partitions that change owner, and the others keep flowing.
            // Members hear of a rebalance on their next heartbeat, so a 1 s heartbeat is what
            // bounds how long a moved partition goes unconsumed (about 1 s; 3 s and up to 10 s
            // at librdkafka's 3 s heartbeat; about 4.7 s with the consumer protocol of KIP-848,
            // whose heartbeat the broker sets at 5 s: BENCHMARKS.md, "Groups that move").
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("heartbeat.interval.ms", "1000")
            // A consumer that dies (a killed worker) keeps its partitions until its session
            // times out, and after the broker itself was away longer than a session, the group
            // waits that long for the members it remembers before it rebalances: 6 s (the
            // least brokers allow by default, `group.min.session.timeout.ms`) instead of
            // librdkafka's 45 s, so another worker takes over, or consumption resumes, sooner
            // (10 s made it 10.3 s after a broker's return: BENCHMARKS.md, "Broker loss").
            .set("session.timeout.ms", "6000");
        if let Some(instance) = &options.instance_id {
            config.set("group.instance.id", instance);
        }
        let inner: StreamConsumer<Assignment> = config.create_with_context(Assignment::default())?;
        inner.subscribe(&[&options.topic])?;
        Ok(Self {
            inner,
            dead_letters,
            topic: options.topic.clone(),
            retry: options.retry,
        })
    }

    /// Runs until `shutdown` resolves or the handler fails fatally. On shutdown each lane finishes
    /// the message (or batch) it is handling (messages queued behind it are redelivered later); offsets
    /// stored so far are committed before returning.
    pub async fn run<H: Handler + 'static>(
        self,
        handler: H,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), Error> {
        let consumer = Arc::new(self);
        let handler = Arc::new(handler);
        let (stop, stopped) = watch::channel(false);
        let mut lanes: HashMap<i32, lane::LaneSender> = HashMap::new();
        let mut running = JoinSet::new();
        tokio::pin!(shutdown);
        let mut result = loop {
            let message = tokio::select! {
                () = &mut shutdown => break Ok(()),
                Some(ended) = running.join_next() => match lane_result(ended) {
                    Ok(()) => continue,
                    Err(error) => break Err(error),
                },
                received = consumer.inner.recv() => received.map(|m| m.detach()),
            };
            let message = match message {
                Ok(message) => message,
                // What librdkafka reports here (a broker unreachable, all of them down) it
                // recovers from by itself, and it queued one report a second while it lasted:
                // waiting after each would keep the consumer reading stale reports long after
                // the broker is back (a 20 s outage cost 10 s more at 500 ms each).
                // What it cannot recover from (a fatal error: fenced, refused credentials) stops
                // the consumer, so the worker reports it instead of running and consuming
                // nothing.
                Err(KafkaError::MessageConsumptionFatal(code)) => {
                    break Err(Error::Fatal(format!(
                        "consuming {}: {code}",
                        consumer.topic
                    )));
                }
                Err(error) => {
                    tracing::warn!(topic = %consumer.topic, %error, "consume reported an error");
                    continue;
                }
            };
            let partition = message.partition();
            let lane = lanes.entry(partition).or_insert_with(|| {
                let (sender, lane) = lane::start(&consumer, &handler, partition, stopped.clone());
                running.spawn(lane);
                sender
            });
            if lane.queue(message).is_err() {
                // The lane ended (it reports why when joined); the message is redelivered.
                lanes.remove(&partition);
            }
        };
        let _ = stop.send(true);
        drop(lanes);
        while let Some(ended) = running.join_next().await {
            if let Err(error) = lane_result(ended) {
                result = result.and(Err(error));
            }
        }
        if let Err(error) = consumer.inner.commit_consumer_state(CommitMode::Sync) {
            tracing::debug!(topic = %consumer.topic, %error, "final commit skipped");
        }
        result
    }

    /// Handles consecutive messages of one partition until each is applied or dead-lettered
    /// (`Ok(true)`), storing the offsets as it goes: as one batch first, and one at a time
    /// when the batch fails. One at a time, it stops before a message once the partition is no
    /// longer ours (`still_ours`: its new owner applies the rest) or shutdown has come
    /// (`Ok(false)`, as when shutdown comes during a retry).
    async fn handle_all_until_done<H: Handler>(
        &self,
        handler: &H,
        messages: &[OwnedMessage],
        shutdown: &mut watch::Receiver<bool>,
        still_ours: impl Fn() -> bool + Send + Sync,
    ) -> Result<bool, Error> {
        if let [.., last] = messages
            && messages.len() > 1
        {
            let deliveries: Vec<Delivery<'_>> =
                messages.iter().map(|m| Delivery::of(m, 1)).collect();
            match handler.handle_batch(&deliveries).await {
                Ok(()) => {
                    self.store_offset(last);
                    return Ok(true);
                }
                Err(HandleError::Fatal(reason)) => return Err(Error::Fatal(reason)),
                Err(error) => tracing::info!(
                    topic = %self.topic,
                    partition = last.partition(),
                    messages = messages.len(),
                    %error,
                    "a batch failed; applying its messages one at a time"
                ),
            }
        }
        for message in messages {
            if *shutdown.borrow() {
                return Ok(false);
            }
            if !still_ours() {
                return Ok(true);
            }
            match self
                .handle_until_done(handler, message, shutdown, &still_ours)
                .await?
            {
                Handled::Done => self.store_offset(message),
                // Its new owner applies it and what follows.
                Handled::Revoked => return Ok(true),
                Handled::Stopped => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Marks `message` and everything before it in its partition as done, for the next commit.
    fn store_offset(&self, message: &OwnedMessage) {
        fail::fail_point!("consumer.before_offset_store");
        if let Err(error) =
            self.inner
                .store_offset(message.topic(), message.partition(), message.offset())
        {
            // The partition was revoked meanwhile; its new owner redelivers.
            tracing::warn!(topic = %self.topic, %error, "offset not stored");
        }
        fail::fail_point!("consumer.after_offset_store");
    }

    /// Handles one message until it is applied or dead-lettered, shutdown comes during a retry,
    /// the partition is no longer ours when a retry is due (`still_ours`), or the handler fails
    /// fatally.
    async fn handle_until_done<H: Handler>(
        &self,
        handler: &H,
        message: &OwnedMessage,
        shutdown: &mut watch::Receiver<bool>,
        still_ours: &(impl Fn() -> bool + Send + Sync),
    ) -> Result<Handled, Error> {
        let mut delays = self.retry.delays();
        let (mut attempt, mut failed) = (0, 0);
        loop {
            attempt += 1;
            let delivery = Delivery::of(message, attempt);
            let reason = match handler.handle(&delivery).await {
                Ok(()) => return Ok(Handled::Done),
                Err(HandleError::Fatal(reason)) => return Err(Error::Fatal(reason)),
                Err(HandleError::Poison(reason)) => {
                    return self
                        .dead_letter(handler, &delivery, &reason, shutdown)
                        .await
                        .map(Handled::from_dead_letter);
                }
                Err(HandleError::Retryable(reason)) => {
                    failed += 1;
                    if failed >= self.retry.attempts {
                        let reason = format!("gave up after {failed} attempts: {reason}");
                        return self
                            .dead_letter(handler, &delivery, &reason, shutdown)
                            .await
                            .map(Handled::from_dead_letter);
                    }
                    reason
                }
                Err(HandleError::Unavailable(reason)) => reason,
            };
            let delay = delays.next().unwrap_or(self.retry.max_delay);
            tracing::warn!(
                topic = delivery.topic,
                partition = delivery.partition,
                offset = delivery.offset,
                attempt,
                %reason,
                "handler failed; retrying"
            );
            if !pause(delay, shutdown).await {
                return Ok(Handled::Stopped);
            }
            if !still_ours() {
                return Ok(Handled::Revoked);
            }
        }
    }

    /// Parks `delivery` on the dead-letter topic and tells the handler, each retried until it
    /// succeeds (a broker or database outage is waited out); `Ok(false)` when shutdown comes
    /// first.
    async fn dead_letter<H: Handler>(
        &self,
        handler: &H,
        delivery: &Delivery<'_>,
        reason: &str,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<bool, Error> {
        let mut delays = self.retry.delays();
        while let Err(error) = self.park(delivery, reason).await {
            tracing::warn!(topic = delivery.topic, %error, "dead-letter topic unavailable; retrying");
            if !pause(delays.next().unwrap_or(self.retry.max_delay), shutdown).await {
                return Ok(false);
            }
        }
        metrics::counter!("consumer.dead_lettered", "topic" => delivery.topic.to_owned())
            .increment(1);
        let mut delays = self.retry.delays();
        loop {
            match handler.dead_lettered(delivery, reason).await {
                Ok(()) => return Ok(true),
                Err(HandleError::Fatal(reason)) => return Err(Error::Fatal(reason)),
                Err(HandleError::Poison(why)) => {
                    tracing::error!(topic = delivery.topic, %why, "dead letter not reported");
                    return Ok(true);
                }
                Err(HandleError::Retryable(why) | HandleError::Unavailable(why)) => {
                    tracing::warn!(topic = delivery.topic, %why, "dead letter not reported yet; retrying");
                    if !pause(delays.next().unwrap_or(self.retry.max_delay), shutdown).await {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Puts a message that can never be applied on the dead-letter topic, with where it came
    /// from and why.
    async fn park(&self, delivery: &Delivery<'_>, reason: &str) -> Result<(), Error> {
        tracing::error!(
            topic = delivery.topic,
            partition = delivery.partition,
            offset = delivery.offset,
            %reason,
            "message dead-lettered"
        );
        let partition = delivery.partition.to_string();
        let offset = delivery.offset.to_string();
        // The original headers travel along (its id, its trace), then where it came from and why.
        let mut headers: Vec<(&str, &[u8])> = delivery
            .message
            .headers()
            .map(|h| h.iter().filter_map(|x| Some((x.key, x.value?))).collect())
            .unwrap_or_default();
        headers.extend([
            ("source-topic", delivery.topic.as_bytes()),
            ("source-partition", partition.as_bytes()),
            ("source-offset", offset.as_bytes()),
            ("reason", reason.as_bytes()),
        ]);
        self.dead_letters
            .send_raw(
                catalogue::DEAD_LETTER.name,
                delivery.key.unwrap_or_default(),
                delivery.payload,
                &headers,
            )
            .await?;
        Ok(())
    }
}

fn lane_result(ended: Result<Result<(), Error>, tokio::task::JoinError>) -> Result<(), Error> {
    ended.unwrap_or_else(|panicked| {
        Err(Error::Fatal(format!("a partition lane failed: {panicked}")))
    })
}

/// Waits `delay`; `false` when shutdown comes first.
async fn pause(delay: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = shutdown.wait_for(|stopped| *stopped) => false,
        () = tokio::time::sleep(delay) => true,
    }
}
