//! The dispatcher (SPEC §6.2; docs/outbound-webhooks.md): sends the deliveries the outbound
//! stage recorded to tenants' webhook endpoints. Each pipeline worker holding
//! `SECRET_STORE_KEY` runs one; without it, none runs and deliveries wait in their table.
//!
//! - [`claim`]: due deliveries are read in batches (at once on a `webhook_deliveries`
//!   notification, else every two seconds), each leased to this dispatcher. Reading that fails
//!   loses nothing: the deliveries stay in their table, and the next read takes them.
//! - [`send`]: each is attempted beside the others (up to [`IN_FLIGHT`] at once), signed,
//!   through the outbound defences, within the 10 s receiver timeout.
//! - [`recorder`] and [`record`]: answers are recorded in batches, the next attempt scheduled
//!   by [`schedule`].
//! - [`release`]: deliveries held or due against their endpoint's state are set right.
//!
//! A delivery is attempted at least once per due time: a dispatcher killed between sending and
//! recording leaves its lease to expire, and the delivery is sent again with the same
//! `webhook-id` (receivers deduplicate on it, as Standard Webhooks asks). One delivery row per
//! endpoint and event, whatever happens.

mod claim;
mod record;
mod recorder;
mod release;
mod schedule;
mod send;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use outbound::{Loopback, OutboundClient};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use topics::sealed::SecretKeys;

use self::claim::Due;
use self::record::Answer;
use self::recorder::Done;
use self::send::NotSent;
use crate::job::Job;
use crate::workers::{Worker, WorkerState};

/// The notification channel that wakes dispatchers when deliveries become due.
const CHANNEL: &str = "webhook_deliveries";
/// Read due deliveries at least this often, woken or not (docs/outbound-webhooks.md).
const POLL: Duration = Duration::from_secs(2);
/// Attempts one dispatcher has in flight at most.
const IN_FLIGHT: usize = 256;
/// How long a stopping dispatcher waits for the attempts in flight to be answered.
const DRAIN: Duration = Duration::from_secs(15);

/// How long a claimed delivery is one dispatcher's: past the 10 s receiver timeout and the time
/// to record the answer.
const LEASE: Duration = Duration::from_secs(60);

/// What a worker sends deliveries with.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    pool: PgPool,
    client: OutboundClient,
    keys: Arc<SecretKeys>,
    loopback: Loopback,
    /// Names this dispatcher on the deliveries it holds (`lease_owner`): host and process.
    owner: Arc<str>,
    lease: Duration,
}

impl Dispatcher {
    /// A dispatcher opening endpoints' secrets with `keys`.
    pub fn new(
        pool: PgPool,
        keys: Arc<SecretKeys>,
        loopback: Loopback,
    ) -> Result<Self, outbound::OutboundError> {
        // The host name the log lines carry (not a setting): it tells operators which worker
        // holds a lease.
        let host = hostname::get()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "worker".to_owned());
        Ok(Self {
            pool,
            client: OutboundClient::new()?,
            keys,
            loopback,
            owner: format!("{host}/{}", std::process::id()).into(),
            lease: LEASE,
        })
    }

    /// The same, naming itself `owner` on its leases and holding them for `lease`.
    pub fn leasing_as(self, owner: &str, lease: Duration) -> Self {
        Self {
            owner: owner.into(),
            lease,
            ..self
        }
    }

    /// [`Dispatcher::run`] with a `/healthz` registry of its own.
    pub async fn run_alone(self, stop: CancellationToken) {
        let worker = crate::workers::Workers::default().register("webhook-deliveries");
        self.run(worker, stop).await;
    }

    /// Sends due deliveries until `stop`, then waits for the attempts in flight.
    pub(crate) async fn run(self, worker: Worker, stop: CancellationToken) {
        let (done, answers) = mpsc::channel(IN_FLIGHT * 2);
        let recorder = tokio::spawn(recorder::run(
            self.pool.clone(),
            answers,
            worker.clone(),
            stop.clone(),
        ));
        let permits = Arc::new(Semaphore::new(IN_FLIGHT));
        let mut listener = listen(&self.pool).await;
        worker.set(WorkerState::Running);
        let mut released_at = tokio::time::Instant::now();
        while !stop.is_cancelled() {
            if released_at.elapsed() >= release::RELEASE_EVERY {
                released_at = tokio::time::Instant::now();
                match release::held_deliveries(&self.pool).await {
                    Ok(0) => {}
                    Ok(moved) => tracing::info!(moved, "held deliveries set right"),
                    Err(error) => tracing::warn!(%error, "held deliveries not set right yet"),
                }
            }
            let room = permits.available_permits();
            if room == 0 {
                tokio::select! {
                    () = stop.cancelled() => break,
                    permit = permits.acquire() => drop(permit),
                }
                continue;
            }
            let asked = room.min(IN_FLIGHT);
            let lease = (&*self.owner, self.lease);
            match claim::due(&self.pool, asked as i64, lease).await {
                Ok(batch) => {
                    worker.set(WorkerState::Running);
                    let full = batch.len() == asked;
                    for due in batch {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            break;
                        };
                        let (dispatcher, done) = (self.clone(), done.clone());
                        tokio::spawn(async move {
                            let finished = dispatcher.attempt(due).await;
                            let _ = done.send(finished).await;
                            drop(permit);
                        });
                    }
                    if full {
                        continue;
                    }
                }
                Err(error) => {
                    worker.set(WorkerState::Retrying);
                    tracing::warn!(%error, "due deliveries not read; they wait in their table");
                }
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = wait(&mut listener) => {}
            }
        }
        // The attempts in flight are answered (or time out) before the recorder stops.
        let all = u32::try_from(IN_FLIGHT).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(DRAIN, permits.acquire_many(all)).await;
        drop(done);
        let _ = recorder.await;
        worker.set(WorkerState::Stopped);
    }

    async fn attempt(&self, due: Due) -> Done {
        let span = tracing::info_span!(
            "webhook.deliver",
            svc.tenant_id = %due.tenant_id,
            svc.webhook.delivery_id = %due.id,
            svc.webhook.endpoint_id = %due.endpoint_id,
            svc.webhook.event_type = %due.event.kind,
            svc.webhook.attempt = due.attempt,
        );
        let attempted = tracing::Instrument::instrument(
            send::attempt(&self.client, &self.keys, self.loopback, &due),
            span,
        )
        .await;
        match attempted {
            Ok(attempted) => {
                observe(&due, &attempted);
                Done::Answered(Answer {
                    delivery_id: due.id,
                    lease_id: due.lease_id,
                    tenant_id: due.tenant_id,
                    endpoint_id: due.endpoint_id,
                    event_type: due.event.kind,
                    event_id: due.event.id,
                    attempt: due.attempt,
                    allowed: due.allowed,
                    attempted,
                })
            }
            Err(NotSent::Unsigned) => {
                tracing::warn!(delivery = %due.id, "no signing secret of the endpoint opens here");
                Done::Unsigned {
                    delivery_id: due.id,
                    lease_id: due.lease_id,
                }
            }
        }
    }
}

/// The job: a dispatcher with its state on `/healthz` (task queue `webhook-deliveries`).
pub(crate) struct Dispatching {
    pub(crate) dispatcher: Dispatcher,
    pub(crate) worker: Worker,
}

impl Job for Dispatching {
    fn run(self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        self.dispatcher.run(self.worker, stop)
    }
}

/// `svc.webhook.delivery.duration` and, for a first attempt, how long after the event it went
/// (`svc.webhook.delivery.lag`).
fn observe(due: &Due, attempted: &send::Attempted) {
    let tenant = due.tenant_id.to_string();
    let outcome = if attempted.succeeded() {
        "succeeded"
    } else {
        "failed"
    };
    metrics::histogram!("svc.webhook.delivery.duration", "tenant" => tenant.clone(),
        "outcome" => outcome)
    .record(attempted.duration_ms);
    if due.attempt == 1 {
        let lag = (attempted.started_at - due.event.occurred_at).as_seconds_f64();
        metrics::histogram!("svc.webhook.delivery.lag", "tenant" => tenant).record(lag.max(0.0));
    }
}

async fn listen(pool: &PgPool) -> Option<PgListener> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .inspect_err(|error| tracing::warn!(%error, "delivery notifications off; polling"))
        .ok()?;
    listener
        .listen(CHANNEL)
        .await
        .inspect_err(|error| tracing::warn!(%error, "delivery notifications off; polling"))
        .ok()?;
    Some(listener)
}

/// Wakes the dispatchers once `tx` commits: deliveries became due.
pub(crate) async fn wake(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
) -> Result<(), crate::Error> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(CHANNEL)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Until a notification or the poll interval, whichever comes first.
async fn wait(listener: &mut Option<PgListener>) {
    match listener {
        Some(listener) => {
            let _ = tokio::time::timeout(POLL, listener.recv()).await;
        }
        None => tokio::time::sleep(POLL).await,
    }
}
