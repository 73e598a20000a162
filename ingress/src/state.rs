//! What every handler can reach: configuration, connections and the per-instance limiter.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use telemetry::MetricsHandle as PrometheusHandle;
use tokio::sync::OnceCell;

use crate::auth::TokenVerifier;
use crate::config::Config;
use crate::object_store::ObjectStore;
use crate::rate_limit::RateLimiter;
use crate::read_cache::ReadCache;

/// Shared state of the API; cheap to clone.
#[derive(Debug, Clone)]
pub struct State(Arc<Inner>);

#[derive(Debug)]
pub struct Inner {
    pub config: Config,
    pub pool: PgPool,
    pub redis: Redis,
    pub producer: topics::Producer,
    pub objects: Option<ObjectStore>,
    pub verifier: TokenVerifier,
    pub limiter: RateLimiter,
    pub read_cache: Arc<ReadCache>,
    pub metrics: PrometheusHandle,
}

impl std::ops::Deref for State {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// Failures while building the state.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Key(#[from] crate::auth::verifier::KeyError),
    #[error("DATABASE_URL: {0}")]
    Database(#[from] sqlx::Error),
    #[error("REDIS_URL: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("KAFKA_BROKERS: {0}")]
    Broker(#[from] topics::Error),
}

impl State {
    /// Builds the state without waiting for any dependency: a dependency that is down makes
    /// `/health/ready` answer 503 naming it, not the process fail to start.
    pub fn new(config: Config, metrics: PrometheusHandle) -> Result<Self, StartError> {
        let verifier = TokenVerifier::new(&config.auth)?;
        let pool = PgPoolOptions::new()
            .max_connections(config.database_pool_size)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy(&config.database_url)?;
        let redis = Redis::new(&config.redis_url)?;
        let producer = topics::Producer::new(&config.kafka_brokers, "ingress")?;
        let objects = config.storage.as_ref().map(ObjectStore::new);
        let limiter = RateLimiter::new(config.rate_limit_per_minute);
        Ok(Self(Arc::new(Inner {
            config,
            pool,
            redis,
            producer,
            objects,
            verifier,
            limiter,
            read_cache: Arc::new(ReadCache::default()),
            metrics,
        })))
    }
}

/// A Redis connection made on first use and kept (it reconnects by itself afterwards).
#[derive(Debug)]
pub struct Redis {
    client: redis::Client,
    connection: OnceCell<redis::aio::ConnectionManager>,
}

impl Redis {
    pub fn new(url: &str) -> Result<Self, redis::RedisError> {
        Ok(Self {
            client: redis::Client::open(url)?,
            connection: OnceCell::new(),
        })
    }

    pub async fn connection(&self) -> Result<redis::aio::ConnectionManager, redis::RedisError> {
        self.connection
            .get_or_try_init(|| redis::aio::ConnectionManager::new(self.client.clone()))
            .await
            .cloned()
    }

    /// Readiness: `PING` answers.
    pub async fn probe(&self) -> Result<(), redis::RedisError> {
        let mut connection = self.connection().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await?;
        Ok(())
    }
}
