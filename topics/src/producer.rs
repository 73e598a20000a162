//! The producer: `acks=all` and idempotence on, so an acknowledged message is on every in-sync
//! replica and a retried send is never written twice.
//!
//! librdkafka hands delivery reports to whoever polls its queue. rust-rdkafka's `FutureProducer`
//! polls from a thread of its own in 100 ms windows and spins through the last millisecond of
//! each (a wait under a millisecond rounds down to none): about 1 % of a core per producer,
//! idle or not, which a pipeline with a producer per stage paid twelve times over (13 % of a
//! core at rest). [`Producer`] keeps rust-rdkafka's `BaseProducer` and polls it from one thread
//! in one-second windows instead: the same reports, a thousandth of the spin.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Header, Message as _, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer as _, ProducerContext};
use rdkafka::util::Timeout;
use tokio::sync::oneshot;

use crate::client_log::Reporter;
use crate::{Cluster, Envelope, Error, Message};

/// Where a message landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub partition: i32,
    pub offset: i64,
}

/// A cheap, clonable handle to one idempotent producer.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Polled>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}

/// The producer and its polling thread, which stops within a window once the last handle is
/// dropped (the thread's own reference keeps the client until then).
struct Polled {
    producer: Arc<BaseProducer<Reports>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Polled {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How long one poll of the delivery reports waits for the next one.
const POLL_WINDOW: Duration = Duration::from_secs(1);

/// What a delivery report resolves: the send waiting for it.
type Waiting = oneshot::Sender<Result<Delivered, KafkaError>>;

/// The producer's context: librdkafka's logs and errors go to the [`Reporter`], each delivery
/// report to the send that waits for it.
struct Reports(Reporter);

impl ClientContext for Reports {
    fn stats(&self, statistics: rdkafka::Statistics) {
        self.0.stats(statistics);
    }

    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        self.0.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.0.error(error, reason);
    }
}

impl ProducerContext for Reports {
    type DeliveryOpaque = Box<Waiting>;

    fn delivery(&self, result: &DeliveryResult<'_>, waiting: Box<Waiting>) {
        let delivered = match result {
            Ok(message) => Ok(Delivered {
                partition: message.partition(),
                offset: message.offset(),
            }),
            Err((error, _)) => Err(error.clone()),
        };
        // The send may have stopped waiting (its request went away): nothing to tell.
        let _ = waiting.send(delivered);
    }
}

/// How long a send may wait for its acknowledgement before it fails: librdkafka retries within
/// it (a leader moving, a broker restarting), then gives the message up, so a route whose
/// command could not be written answers 503 within seconds instead of hanging while the broker
/// is away. A message queued all that time was never sent; one whose request was on its way
/// when the broker went may have been written all the same (librdkafka's "possibly persisted"),
/// so a 503 tells the caller to retry, not that nothing happened. Writers that must not give up
/// (the outbox relay, dead letters) send again.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a message waits for others to share its produce request, by default: a command a
/// route waits on is sent almost at once.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(1);

/// How long a send waits before trying again when librdkafka's queue is full.
const QUEUE_FULL_WAIT: Duration = Duration::from_millis(100);

impl Producer {
    pub fn new(cluster: &Cluster, client_id: &str) -> Result<Self, Error> {
        Self::with_linger(cluster, client_id, DEFAULT_LINGER)
    }

    /// A producer whose messages wait up to `linger` for others to share their produce request
    /// (librdkafka's `linger.ms`): fewer, larger requests for a broker whose cost is per request,
    /// against that much latency per message.
    pub fn with_linger(
        cluster: &Cluster,
        client_id: &str,
        linger: Duration,
    ) -> Result<Self, Error> {
        let producer: BaseProducer<Reports> = cluster
            .client_config(client_id)
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("linger.ms", linger.as_millis().to_string())
            .set(
                "message.timeout.ms",
                DELIVERY_TIMEOUT.as_millis().to_string(),
            )
            .create_with_context(Reports(Reporter))?;
        let producer = Arc::new(producer);
        let stop = Arc::new(AtomicBool::new(false));
        let (polled, stopped) = (producer.clone(), stop.clone());
        std::thread::Builder::new()
            .name("producer polling".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    polled.poll(POLL_WINDOW);
                }
            })
            .map_err(|e| Error::Fatal(format!("producer polling thread: {e}")))?;
        Ok(Self {
            inner: Arc::new(Polled { producer, stop }),
        })
    }

    /// Sends a command or event on its topic, keyed by its aggregate; resolves once every
    /// in-sync replica has it. Its id and trace context travel as headers too, so a message
    /// that no longer decodes can still be answered and traced.
    pub async fn send<B: Message>(&self, envelope: &Envelope<B>) -> Result<Delivered, Error> {
        let payload = envelope.encode()?;
        let id = envelope.id.to_string();
        let mut headers: Vec<(&str, &[u8])> = vec![("id", id.as_bytes())];
        if let Some(traceparent) = &envelope.traceparent {
            headers.push(("traceparent", traceparent.as_bytes()));
        }
        self.send_raw(B::TOPIC.name, &envelope.key(), &payload, &headers)
            .await
    }

    /// Sends a message's bytes on `topic`; resolves once acknowledged (the outbox relay and the
    /// dead-letter path send what they read).
    pub async fn send_raw(
        &self,
        topic: &str,
        key: &[u8],
        payload: &[u8],
        headers: &[(&str, &[u8])],
    ) -> Result<Delivered, Error> {
        let mut owned = OwnedHeaders::new_with_capacity(headers.len());
        for (name, value) in headers {
            owned = owned.insert(Header {
                key: name,
                value: Some(*value),
            });
        }
        let (waiting, delivered) = oneshot::channel();
        let mut record = BaseRecord::with_opaque_to(topic, Box::new(waiting))
            .key(key)
            .payload(payload)
            .headers(owned);
        let queued_by = Instant::now() + DELIVERY_TIMEOUT;
        loop {
            match self.inner.producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), again))
                    if Instant::now() < queued_by =>
                {
                    record = again;
                    tokio::time::sleep(QUEUE_FULL_WAIT).await;
                }
                Err((error, _)) => return Err(Error::Kafka(error)),
            }
        }
        // The client outlives every queued message (the polling thread holds it), so each gets
        // its report: a dropped sender would be a report lost.
        delivered
            .await
            .map_err(|_| Error::Fatal("a delivery report was lost".into()))?
            .map_err(Error::Kafka)
    }

    /// Asks the broker for its metadata: the readiness probe of every service.
    pub async fn probe(&self, timeout: Duration) -> Result<(), Error> {
        let client = self.inner.producer.clone();
        tokio::task::spawn_blocking(move || {
            client
                .client()
                .fetch_metadata(None, Timeout::After(timeout))
                .map(|_| ())
        })
        .await
        .map_err(|_| Error::Timeout(timeout))?
        .map_err(Error::Kafka)
    }

    /// The readiness probe of a service that produces: [`Producer::probe`] on a handle of its
    /// own, with the failure as text (`service::health::Readiness::probe` takes it as it is).
    pub fn readiness_probe(
        &self,
        timeout: Duration,
    ) -> impl Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync + 'static
    {
        let producer = self.clone();
        move || {
            let producer = producer.clone();
            Box::pin(async move { producer.probe(timeout).await.map_err(|e| e.to_string()) })
        }
    }

    /// Waits for every queued message to be acknowledged (at shutdown).
    pub fn flush(&self, timeout: Duration) -> Result<(), Error> {
        self.inner.producer.flush(Timeout::After(timeout))?;
        Ok(())
    }
}
