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

/// Shared state of the API; cheap to clone. A handler reaches for the part it works with:
/// [`Reads`] for lists and details, [`Commands`] to change anything, [`Apps`] for modules and
/// the runner, [`Webhooks`] for vendor events; the listener's own (token checks, rate limits,
/// health) is [`Listener`].
#[derive(Debug, Clone)]
pub(crate) struct State(Arc<Inner>);

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) reads: Reads,
    pub(crate) commands: Commands,
    pub(crate) apps: Apps,
    pub(crate) webhooks: Webhooks,
    pub(crate) listener: Listener,
    pub(crate) redis: redis::Client,
    /// The audit exports running (`routes::audit_export`).
    pub(crate) audit_exports: Arc<Semaphore>,
}

/// What lists and details read: the database, and the cache of the costly answers.
#[derive(Debug)]
pub(crate) struct Reads {
    pub(crate) pool: PgPool,
    pub(crate) cache: Arc<ReadCache>,
}

/// What sends a command and waits for its outcome (`crate::commands`): the producer, the
/// replies heard, and the inbox a missed reply is read from.
#[derive(Debug)]
pub(crate) struct Commands {
    pub(crate) producer: topics::Producer,
    pub(crate) replies: Arc<Replies>,
    pub(crate) pool: PgPool,
    /// How long a route waits for an outcome (`COMMAND_WAIT_SECONDS`).
    pub(crate) wait: Duration,
}

/// What apps' modules and calls need: the runner and the object store when the deployment has
/// them, the versions as stored and their compiled schemas, the operator's blocked modules.
#[derive(Debug)]
pub(crate) struct Apps {
    /// The runner's client, when the deployment has a runner (`APP_RUNNER_URL`).
    pub(crate) runner: Option<runner::client::RunnerClient>,
    pub(crate) objects: Option<ObjectStore>,
    /// Compiled schemas of app versions (config, action input and output).
    pub(crate) version_schemas: VersionSchemas,
    /// Versions as stored at upload, by id (webhooks, hand-offs, installs).
    pub(crate) stored_versions: StoredVersions,
    /// `APP_BLOCKED_SHA256`.
    blocked_modules: Vec<schema::module::Sha256>,
}

/// The vendor webhook route's own (`routes::webhooks`).
#[derive(Debug)]
pub(crate) struct Webhooks {
    /// The producer of vendor webhook events: its own, lingering longer than commands' (a route
    /// waiting on a command wants it sent at once; webhooks come in bursts).
    pub(crate) events: topics::Producer,
    /// Vendor events known recorded (a fast path for repeats).
    pub(crate) recorded: RecordedEvents,
    /// Webhooks handled at once (`WEBHOOK_MAX_IN_FLIGHT`).
    pub(crate) in_flight: Arc<Semaphore>,
    /// Where each app says a webhook's external id is.
    pub(crate) external_id_sources: ExternalIdSources,
}

/// The listener's own (`crate::public`): who a token names, how often a caller may call, and
/// the health answers.
#[derive(Debug)]
pub(crate) struct Listener {
    pub(crate) verifier: TokenVerifier,
    pub(crate) limiter: RateLimiter,
    pub(crate) readiness: Readiness,
    pub(crate) metrics: MetricsHandle,
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

impl Reads {
    /// A connection of the pool, for reads that run several statements on one (a pool that
    /// gives none within its timeout is a 503).
    pub(crate) async fn connection(
        &self,
    ) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, Error> {
        Ok(self.pool.acquire().await.map_err(readers::Error::from)?)
    }
}

impl Apps {
    /// The runner and the object store, or 503 `apps_unavailable` (SPEC §4.7 rule 9).
    pub(crate) fn ready(&self) -> Result<(&runner::client::RunnerClient, &ObjectStore), Error> {
        match (&self.runner, &self.objects) {
            (Some(runner), Some(objects)) => Ok((runner, objects)),
            _ => Err(Error::AppsUnavailable),
        }
    }

    /// Whether the operator blocked `sha256` (`APP_BLOCKED_SHA256`).
    pub(crate) fn is_blocked(&self, sha256: &str) -> bool {
        self.blocked_modules.iter().any(|b| b.as_str() == sha256)
    }
}

impl State {
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
        let readiness = crate::health::readiness(
            pool.clone(),
            redis.clone(),
            producer.clone(),
            objects.clone(),
        );
        Ok(Self(Arc::new(Inner {
            reads: Reads {
                pool: pool.clone(),
                cache: Arc::new(ReadCache::new(read_cache_bytes, TIME_TO_LIVE)),
            },
            commands: Commands {
                producer,
                replies: Arc::new(Replies::default()),
                pool,
                wait: config.command_wait,
            },
            apps: Apps {
                runner,
                objects,
                version_schemas: VersionSchemas::default(),
                stored_versions: StoredVersions::default(),
                blocked_modules: config.blocked_modules.clone(),
            },
            webhooks: Webhooks {
                events: webhook_events,
                recorded: RecordedEvents::new(redis.clone()),
                in_flight: Arc::new(Semaphore::new(config.webhook_max_in_flight)),
                external_id_sources: ExternalIdSources::default(),
            },
            listener: Listener {
                verifier,
                limiter,
                readiness,
                metrics,
            },
            config,
            redis,
            audit_exports: Arc::new(Semaphore::new(AUDIT_EXPORTS_AT_ONCE)),
        })))
    }
}
