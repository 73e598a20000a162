//! The consumer loop. A message's offset is stored only after its handler returned, that is
//! after the handler's effect is committed; messages are handled one after another, so offsets
//! advance in order per partition and a crash redelivers from the first unfinished message.
//! Handlers must therefore be idempotent (the pipeline's inbox makes them so).

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use backon::{BackoffBuilder, ExponentialBuilder};
use rdkafka::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer as _, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Headers, Message as _};

use crate::{Error, Producer, catalogue};

/// What a handler's failure means for the message.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// A dependency failed (database down, broker busy): the same message is retried, with
    /// backoff, before any later message of the partition.
    #[error("retryable: {0}")]
    Retryable(String),
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
    message: &'a BorrowedMessage<'a>,
}

impl Delivery<'_> {
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
}

/// Where and as whom to consume.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    pub brokers: String,
    pub group_id: String,
    pub topic: String,
    pub client_id: String,
    /// How often stored offsets are committed to the broker.
    pub commit_interval: Duration,
}

/// A consumer of one topic in one group, with its dead-letter producer.
pub struct Consumer {
    inner: StreamConsumer,
    dead_letters: Producer,
    topic: String,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    pub fn new(options: &ConsumerOptions) -> Result<Self, Error> {
        let inner: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", &options.brokers)
            .set("group.id", &options.group_id)
            .set("client.id", &options.client_id)
            .set("enable.auto.commit", "true")
            .set(
                "auto.commit.interval.ms",
                options.commit_interval.as_millis().to_string(),
            )
            // Offsets are stored by the loop, after the effect, never by librdkafka on receipt.
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("enable.partition.eof", "false")
            .create()?;
        inner.subscribe(&[&options.topic])?;
        let dead_letters = Producer::new(&options.brokers, &format!("{}-dlq", options.client_id))?;
        Ok(Self {
            inner,
            dead_letters,
            topic: options.topic.clone(),
        })
    }

    /// Runs until `shutdown` resolves or the handler fails fatally. Offsets stored so far are
    /// committed before returning.
    pub async fn run<H: Handler>(
        self,
        handler: H,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), Error> {
        tokio::pin!(shutdown);
        let result = loop {
            let message = tokio::select! {
                () = &mut shutdown => break Ok(()),
                received = self.inner.recv() => received,
            };
            let message = match message {
                Ok(message) => message,
                Err(error) => {
                    tracing::warn!(topic = %self.topic, %error, "consume failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            };
            match self
                .handle_until_done(&handler, &message, &mut shutdown)
                .await
            {
                Ok(true) => {
                    if let Err(error) = self.inner.store_offset_from_message(&message) {
                        // The partition was revoked meanwhile; its new owner redelivers.
                        tracing::warn!(topic = %self.topic, %error, "offset not stored");
                    }
                }
                Ok(false) => break Ok(()),
                Err(error) => break Err(error),
            }
        };
        if let Err(error) = self.inner.commit_consumer_state(CommitMode::Sync) {
            tracing::debug!(topic = %self.topic, %error, "final commit skipped");
        }
        result
    }

    /// Handles one message until it is applied or dead-lettered (`Ok(true)`), shutdown comes
    /// during a retry (`Ok(false)`), or the handler fails fatally.
    async fn handle_until_done<H: Handler>(
        &self,
        handler: &H,
        message: &BorrowedMessage<'_>,
        shutdown: &mut (impl Future<Output = ()> + Unpin),
    ) -> Result<bool, Error> {
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(30))
            .with_jitter()
            .without_max_times()
            .build();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let delivery = Delivery {
                topic: message.topic(),
                partition: message.partition(),
                offset: message.offset(),
                key: message.key(),
                payload: message.payload().unwrap_or_default(),
                attempt,
                message,
            };
            match handler.handle(&delivery).await {
                Ok(()) => return Ok(true),
                Err(HandleError::Poison(reason)) => {
                    self.dead_letter(&delivery, &reason).await?;
                    return Ok(true);
                }
                Err(HandleError::Fatal(reason)) => return Err(Error::Fatal(reason)),
                Err(HandleError::Retryable(reason)) => {
                    let delay = delays.next().unwrap_or(Duration::from_secs(30));
                    tracing::warn!(
                        topic = delivery.topic,
                        partition = delivery.partition,
                        offset = delivery.offset,
                        attempt,
                        %reason,
                        "handler failed; retrying"
                    );
                    tokio::select! {
                        () = &mut *shutdown => return Ok(false),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    /// Parks a message that can never be applied, with where it came from and why.
    async fn dead_letter(&self, delivery: &Delivery<'_>, reason: &str) -> Result<(), Error> {
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
