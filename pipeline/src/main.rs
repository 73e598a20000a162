//! `pipeline`: applies migrations, creates the topics, relays the outbox, keeps invocation
//! partitions ahead, runs the stages, and serves health on `WORKER_HEALTH_PORT`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use pipeline::config::Config;
use pipeline::outbox::Relay;
use pipeline::{Error, partitions};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use telemetry::health::{self, Check, Probes};
use telemetry::shutdown;

fn main() -> ExitCode {
    telemetry::service::main("pipeline", env!("CARGO_PKG_VERSION"), |telemetry| {
        Box::pin(async move { Ok(run(telemetry).await?) })
    })
}

/// Dependencies may still be starting: retry for about a minute before giving up.
fn start_up_retry() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(5))
        .with_max_times(20)
}

async fn run(telemetry: &telemetry::Telemetry) -> Result<(), Error> {
    let config = Config::from_env()?;
    let stop = shutdown::on_signal();

    let pool = PgPoolOptions::new()
        .max_connections(config.database_pool_size)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(&config.database_url)?;
    (|| async { schema::migrate(&pool).await })
        .retry(start_up_retry())
        .notify(|error, wait| tracing::warn!(%error, ?wait, "migrations not applied yet; retrying"))
        .await?;
    tracing::info!("migrations applied");
    partitions::ensure(&pool).await?;

    (|| async {
        topics::admin::ensure_topics(&config.kafka_brokers, topics::catalogue::ALL).await
    })
    .retry(start_up_retry())
    .notify(|error, wait| tracing::warn!(%error, ?wait, "topics not ensured yet; retrying"))
    .await?;
    tracing::info!(topics = topics::catalogue::ALL.len(), "topics ensured");

    let producer = topics::Producer::new(&config.kafka_brokers, "pipeline")?;
    let redis = redis::Client::open(config.redis_url.as_str())?;

    let relay = tokio::spawn(Relay::new(pool.clone(), producer.clone()).run(stop.clone()));
    let maintenance = tokio::spawn(partitions::maintain(pool.clone(), stop.clone()));
    let health_server = health::serve(
        config.health_addr,
        probes(pool.clone(), redis, producer.clone()),
        telemetry.metrics_handle(),
        stop.clone().cancelled_owned(),
    );
    tracing::info!("pipeline running");
    let served = health_server.await;
    let _ = tokio::join!(relay, maintenance);
    let _ = producer.flush(Duration::from_secs(5));
    served.map_err(|e| Error::Config(format!("health listener on {}: {e}", config.health_addr)))?;
    tracing::info!("pipeline stopped");
    Ok(())
}

fn probes(pool: PgPool, redis: redis::Client, producer: topics::Producer) -> Probes {
    Arc::new(move || {
        let pool = pool.clone();
        let redis = redis.clone();
        let producer = producer.clone();
        Box::pin(async move {
            let checks: (Check, Check, Check) = tokio::join!(
                health::check("postgres", async {
                    sqlx::query_scalar::<_, i32>("SELECT 1")
                        .fetch_one(&pool)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
                health::check("redis", async {
                    let mut connection = redis
                        .get_multiplexed_async_connection()
                        .await
                        .map_err(|e| e.to_string())?;
                    redis::cmd("PING")
                        .query_async::<String>(&mut connection)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
                health::check("broker", async {
                    producer
                        .probe(health::PROBE_TIMEOUT)
                        .await
                        .map_err(|e| e.to_string())
                }),
            );
            vec![checks.0, checks.1, checks.2]
        })
    })
}
