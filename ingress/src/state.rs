//! What every handler can reach: configuration, connections, the per-instance limiter, the
//! read cache and readiness.

use std::sync::Arc;
use std::time::Duration;

use service::health::Readiness;
use service::telemetry::MetricsHandle;
use sqlx::PgPool;
use tokio::sync::Semaphore;

use crate::auth::TokenVerifier;
use crate::config::Config;
use crate::directory::Sightings;
use crate::error::Error;
use crate::external_id_sources::ExternalIdSources;
use crate::object_store::ObjectStore;
use crate::rate_limit::RateLimiter;
use crate::read_cache::{ReadCache, TIME_TO_LIVE};
use crate::recorded_events::RecordedEvents;
use crate::replies::Replies;
use crate::stored_versions::StoredVersions;
use crate::version_schemas::VersionSchemas;

/// How many audit exports run at once in a process (beyond: 503 `overloaded` with
/// `Retry-After`, `routes::audit_export`).
pub(crate) const AUDIT_EXPORTS_AT_ONCE: usize = 4;

/// Shared state of the API; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct State(Arc<Inner>);

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) pool: PgPool,
    pub(crate) producer: topics::Producer,
    /// The producer of vendor webhook events: its own, lingering longer than commands' (a route
    /// waiting on a command wants it sent at once; webhooks come in bursts).
    pub(crate) webhook_events: topics::Producer,
    pub(crate) objects: Option<ObjectStore>,
    /// The runner's client, when the deployment has a runner (`APP_RUNNER_URL`).
    pub(crate) runner: Option<runner::client::RunnerClient>,
    pub(crate) redis: redis::Client,
    pub(crate) replies: Arc<Replies>,
    pub(crate) verifier: TokenVerifier,
    pub(crate) limiter: RateLimiter,
    pub(crate) read_cache: Arc<ReadCache>,
    pub(crate) readiness: Readiness,
    pub(crate) metrics: MetricsHandle,
    /// Vendor events known recorded (a fast path for repeats).
    pub(crate) recorded_events: RecordedEvents,
    /// Webhooks handled at once (`WEBHOOK_MAX_IN_FLIGHT`).
    pub(crate) webhooks_in_flight: Arc<Semaphore>,
    /// The audit exports running (`routes::audit_export`).
    pub(crate) audit_exports: Arc<Semaphore>,
    /// Where each app says a webhook's external id is.
    pub(crate) external_id_sources: ExternalIdSources,
    /// Compiled schemas of app versions (config, action input and output).
    pub(crate) version_schemas: VersionSchemas,
    /// Versions as stored at upload, by id (webhooks, hand-offs, installs).
    pub(crate) stored_versions: StoredVersions,
}

impl std::ops::Deref for State {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// Failures while building the state.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Key(#[from] crate::auth::verifier::KeyError),
    #[error("DATABASE_URL: {0}")]
    Database(#[from] sqlx::Error),
    #[error("REDIS_URL: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("KAFKA_BROKERS: {0}")]
    Broker(#[from] topics::Error),
    #[error("APP_RUNNER_URL: {0}")]
    Runner(#[from] reqwest::Error),
}

impl State {
    /// The runner and the object store, or 503 `apps_unavailable` (SPEC §4.7 rule 9).
    pub(crate) fn apps(&self) -> Result<(&runner::client::RunnerClient, &ObjectStore), Error> {
        match (&self.runner, &self.objects) {
            (Some(runner), Some(objects)) => Ok((runner, objects)),
            _ => Err(Error::AppsUnavailable),
        }
    }

    /// Whether the operator blocked `sha256` (`APP_BLOCKED_SHA256`).
    pub(crate) fn is_blocked(&self, sha256: &str) -> bool {
        self.config
            .blocked_modules
            .iter()
            .any(|b| b.as_str() == sha256)
    }

    /// Builds the state without waiting for any dependency: a dependency that is down makes
    /// `/health/ready` answer 503 naming it, not the process fail to start.
    pub(crate) fn new(
        config: Config,
        metrics: MetricsHandle,
        sightings: Sightings,
    ) -> Result<Self, StartError> {
        let verifier = TokenVerifier::new(&config.auth)?.noting(sightings);
        let read_cache_bytes = config.read_cache_bytes;
        let pool = service::postgres_pool::options()
            .max_connections(config.database_pool_size)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy(&config.database_url)?;
        let redis = redis::Client::open(config.redis_url.as_str())?;
        let producer = topics::Producer::new(&config.kafka, "ingress")?;
        let webhook_events = topics::Producer::with_linger(
            &config.kafka,
            "ingress-webhooks",
            config.webhook_produce_linger,
        )?;
        let objects = config.storage.as_ref().map(ObjectStore::new);
        let runner = match (&config.runner_url, &config.runner_token) {
            (Some(url), Some(token)) => Some(runner::client::RunnerClient::new(url, token)?),
            _ => None,
        };
        let limiter = RateLimiter::new(config.rate_limit_per_minute);
        let redis_for_recorded = redis.clone();
        let webhooks_in_flight = Arc::new(Semaphore::new(config.webhook_max_in_flight));
        let readiness = crate::health::readiness(
            pool.clone(),
            redis.clone(),
            producer.clone(),
            objects.clone(),
        );
        Ok(Self(Arc::new(Inner {
            config,
            pool,
            producer,
            webhook_events,
            objects,
            runner,
            redis,
            replies: Arc::new(Replies::default()),
            verifier,
            limiter,
            read_cache: Arc::new(ReadCache::new(read_cache_bytes, TIME_TO_LIVE)),
            readiness,
            metrics,
            recorded_events: RecordedEvents::new(redis_for_recorded),
            webhooks_in_flight,
            audit_exports: Arc::new(Semaphore::new(AUDIT_EXPORTS_AT_ONCE)),
            external_id_sources: ExternalIdSources::default(),
            version_schemas: VersionSchemas::default(),
            stored_versions: StoredVersions::default(),
        })))
    }
}
