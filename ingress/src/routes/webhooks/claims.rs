//! Which delivery of a vendor event is the one that records it (SPEC §4.8 "event id seen
//! before"), decided before anything is produced so that of many deliveries arriving together
//! exactly one is answered `received` and the others `duplicate`:
//!
//! 1. `SET webhook-event:<tenant>:<app>:<event id> claimed NX PX 60000`: the delivery that sets
//!    it goes on, produces its event and then marks the key `recorded` (kept eight days); if
//!    the produce fails, or the delivery ends any other way first (an error, the client gone),
//!    the key is deleted, so a retry can claim it again; so is a recorded key whose event the
//!    stage then dead-lettered ([`EventClaims::forget`]).
//! 2. A delivery that finds `recorded` is a duplicate. One that finds `claimed` waits (at most
//!    two seconds) for the claimant to finish: a duplicate is answered only once the first copy
//!    is durable, and if the claimant died or failed the wait ends in 503 `Retry-After`, never in
//!    a 2xx for an event nobody recorded. A claim outlives a crashed claimant by 60 s at most.
//! 3. A claim won is checked against the database (Redis may have lost an old key), so an event
//!    recorded long ago still answers `duplicate`.
//!
//! Redis is only the fast path: the database's unique `(tenant, app, event id)` keeps the effect
//! once whatever Redis says, and the callbacks stage answers a second copy `duplicate`; without
//! Redis, every copy goes that way.

use std::time::Duration;

use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use tokio::sync::OnceCell;
use uuid::Uuid;

/// How long a claim holds without its claimant: beyond the producer's delivery timeout (5 s)
/// and the wait for the stage's answer (`COMMAND_WAIT_SECONDS`, 10 s by default), so a claimant
/// still at work keeps its claim; a copy that claims after it expired is still answered
/// `duplicate` by the stage.
const CLAIM_TTL: Duration = Duration::from_secs(60);
/// How long a recorded event's key is kept (the longest callback wait, and a day).
const RECORDED_TTL: Duration = Duration::from_secs(8 * 24 * 3600);
/// How long a duplicate waits for the claimant before answering 503.
const WAIT_FOR_CLAIMANT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);

const CLAIMED: &str = "claimed";
const RECORDED: &str = "recorded";

/// The claims of one API instance, over a connection opened on first use.
#[derive(Debug)]
pub(crate) struct EventClaims {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
}

/// What claiming an event found.
#[derive(Debug)]
pub(super) enum Claim {
    /// This delivery records the event: [`Claim::recorded`] or [`Claim::release`] when done.
    Won(Option<Held>),
    /// Another delivery recorded it.
    Duplicate,
    /// Another delivery holds the claim and did not finish within the wait.
    Busy,
}

/// A claim this delivery holds (none when Redis was away). Dropped without [`Held::recorded`]
/// (an early return, the request abandoned), it is released.
#[derive(Debug)]
pub(super) struct Held {
    connection: ConnectionManager,
    key: String,
    settled: bool,
}

impl EventClaims {
    pub(crate) fn new(client: redis::Client) -> Self {
        Self {
            client,
            connection: OnceCell::new(),
        }
    }

    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        self.connection
            .get_or_try_init(|| service::redis_connection::manager(self.client.clone()))
            .await
            .cloned()
    }

    /// Whether `event_id` of the tenant's `app` is known recorded (Redis only: a fast path; an
    /// unknown or unreachable answer is `false`, and the delivery goes the whole way).
    pub(super) async fn is_recorded(&self, tenant: Uuid, app: &str, event_id: &str) -> bool {
        let key = key(tenant, app, event_id);
        let found: redis::RedisResult<Option<String>> = match self.connection().await {
            Ok(mut connection) => connection.get(&key).await,
            Err(error) => Err(error),
        };
        matches!(found, Ok(Some(value)) if value == RECORDED)
    }

    /// Forgets `event_id` of the tenant's `app`: it was produced but not recorded (the stage
    /// dead-lettered it), so a retry must not be answered `duplicate`.
    pub(super) async fn forget(&self, tenant: Uuid, app: &str, event_id: &str) {
        match self.connection().await {
            Ok(connection) => release(connection, key(tenant, app, event_id)).await,
            Err(error) => tracing::warn!(%error, "webhook event claim not forgotten"),
        }
    }

    /// Claims `event_id` of the tenant's `app`.
    pub(super) async fn claim(&self, tenant: Uuid, app: &str, event_id: &str) -> Claim {
        let key = key(tenant, app, event_id);
        match self.try_claim(&key).await {
            Ok(claim) => claim,
            Err(error) => {
                tracing::warn!(%error, "webhook event claims unavailable; the database decides");
                Claim::Won(None)
            }
        }
    }

    async fn try_claim(&self, key: &str) -> redis::RedisResult<Claim> {
        let mut connection = self.connection().await?;
        let deadline = tokio::time::Instant::now() + WAIT_FOR_CLAIMANT;
        loop {
            let options = redis::SetOptions::default()
                .conditional_set(redis::ExistenceCheck::NX)
                .with_expiration(redis::SetExpiry::PX(CLAIM_TTL.as_millis() as u64));
            let set: Option<String> = connection.set_options(key, CLAIMED, options).await?;
            if set.is_some() {
                let held = Held {
                    connection,
                    key: key.to_owned(),
                    settled: false,
                };
                return Ok(Claim::Won(Some(held)));
            }
            let found: Option<String> = connection.get(key).await?;
            match found.as_deref() {
                Some(RECORDED) => return Ok(Claim::Duplicate),
                // Expired or released between the two commands: claim again.
                None => continue,
                Some(_) if tokio::time::Instant::now() >= deadline => return Ok(Claim::Busy),
                Some(_) => tokio::time::sleep(POLL).await,
            }
        }
    }
}

fn key(tenant: Uuid, app: &str, event_id: &str) -> String {
    format!("webhook-event:{tenant}:{app}:{event_id}")
}

impl Held {
    /// The event is durable: later deliveries are duplicates.
    pub(super) async fn recorded(mut self) {
        self.settled = true;
        let result: redis::RedisResult<()> = self
            .connection
            .set_ex(&self.key, RECORDED, RECORDED_TTL.as_secs())
            .await;
        if let Err(error) = result {
            // The claim expires within 30 s; the database still knows the event.
            tracing::warn!(%error, "webhook event claim not marked recorded");
        }
    }

    /// The event was not recorded: a retry may claim it.
    pub(super) async fn release(mut self) {
        self.settled = true;
        release(self.connection.clone(), self.key.clone()).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.settled {
            tokio::spawn(release(
                self.connection.clone(),
                std::mem::take(&mut self.key),
            ));
        }
    }
}

async fn release(mut connection: ConnectionManager, key: String) {
    let result: redis::RedisResult<()> = connection.del(&key).await;
    if let Err(error) = result {
        tracing::warn!(%error, "webhook event claim not released; it expires within 60 s");
    }
}
