//! The producer: `acks=all` and idempotence on, so an acknowledged message is on every in-sync
//! replica and a retried send is never written twice.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer as _};
use rdkafka::util::Timeout;

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
    inner: FutureProducer<Reporter>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
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
        let inner: FutureProducer<Reporter> = cluster
            .client_config(client_id)
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("linger.ms", linger.as_millis().to_string())
            .set(
                "message.timeout.ms",
                DELIVERY_TIMEOUT.as_millis().to_string(),
            )
            .create_with_context(Reporter)?;
        Ok(Self { inner })
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
        let record = FutureRecord::to(topic)
            .key(key)
            .payload(payload)
            .headers(owned);
        let delivery = self
            .inner
            .send(record, Timeout::After(DELIVERY_TIMEOUT))
            .await
            .map_err(|(error, _)| Error::Kafka(error))?;
        Ok(Delivered {
            partition: delivery.partition,
            offset: delivery.offset,
        })
    }

    /// Asks the broker for its metadata: the readiness probe of every service.
    pub async fn probe(&self, timeout: Duration) -> Result<(), Error> {
        let client = self.inner.clone();
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
        self.inner.flush(Timeout::After(timeout))?;
        Ok(())
    }
}
