//! The pipeline process: apply the migrations, create the topics, then run the stages, the
//! outbox relay and the partition upkeep, and serve health (`WORKER_HEALTH_PORT`) until the
//! stop signal.

use std::marker::PhantomData;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use service::health::{PROBE_TIMEOUT, Readiness, probes};
use service::{Process, RunResult};
use sqlx::postgres::PgConnectOptions;
use tokio::net::TcpListener;

use crate::audit_exports::AuditExports;
use crate::backtests::Runner;
use crate::config::Config;
use crate::health::{Health, serve_health};
use crate::health_minutes::HealthMinutes;
use crate::history_changes::HistoryChanges;
use crate::kept_counts::KeptCounts;
use crate::outbox::Relay;
use crate::partitions::Partitions;
use crate::replies::Replies;
use crate::stages::backtests::BacktestsStage;
use crate::stages::callbacks::CallbacksStage;
use crate::stages::cases::CasesStage;
use crate::stages::cases::timers::CaseTimers;
use crate::stages::circuits::CircuitsStage;
use crate::stages::notifications::NotificationsStage;
use crate::stages::outbound::OutboundStage;
use crate::stages::runs::timers::RunTimers;
use crate::stages::runs::{Calls, RunsStage};
use crate::stages::settings::SettingsStage;
use crate::stages::webhook_endpoints::WebhookEndpointsStage;
use crate::stages::{
    self, apps::AppsStage, definitions::DefinitionsStage, documents::DocumentsStage,
    installs::InstallsStage,
};
use crate::timers::{TimerRelay, TimersSet};
use crate::webhook_deliveries::{Dispatcher, Dispatching};
use crate::workers::Workers;
use crate::{core_metrics, gauges, job, partitions};

/// Runs the pipeline.
pub(crate) fn main() -> ExitCode {
    service::main("pipeline", env!("CARGO_PKG_VERSION"), Config::read, run)
}

/// Dependencies may still be starting: retry for about a minute before giving up.
fn start_up_retry() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(5))
        .with_max_times(20)
}

async fn run(config: Config, process: Process) -> RunResult {
    #[cfg(feature = "failpoints")]
    let _failpoints = crate::failpoints::arm();
    let stop = process.stop;
    if let Some(port) = process.metrics_port {
        core_metrics::serve(port, stop.clone());
    }
    // Generic plans only: Postgres plans a prepared statement again on every execution while
    // it estimates that a plan for the values at hand may beat the generic one, and for the
    // stages' batch statements (arrays of ids and rows, `unnest`) it kept doing so: planning
    // cost more than executing (BENCHMARKS.md "Twice the webhooks"). Every statement here
    // looks rows up by key, where the generic plan is the plan.
    let connect = PgConnectOptions::from_str(&config.database_url)?
        .options([("plan_cache_mode", "force_generic_plan")]);
    let pool = service::postgres_pool::options()
        .max_connections(config.database_pool_size)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(connect);
    (|| async { schema::migrate(&pool).await })
        .retry(start_up_retry())
        .notify(|error, wait| tracing::warn!(%error, ?wait, "migrations not applied yet; retrying"))
        .await?;
    tracing::info!("migrations applied");
    partitions::ensure(&pool).await?;

    (|| async { topics::admin::ensure_topics(&config.kafka, topics::catalogue::ALL).await })
        .retry(start_up_retry())
        .notify(|error, wait| tracing::warn!(%error, ?wait, "topics not ensured yet; retrying"))
        .await?;
    tracing::info!(topics = topics::catalogue::ALL.len(), "topics ensured");

    let redis = redis::Client::open(config.redis_url.as_str())?;
    let producer = topics::Producer::new(&config.kafka, "pipeline")?;
    let workers = Workers::default();

    let connection = (|| service::redis_connection::manager(redis.clone()))
        .retry(start_up_retry())
        .notify(|error, wait| tracing::warn!(%error, ?wait, "redis not reachable yet; retrying"))
        .await?;
    let (history, history_publisher) = HistoryChanges::start(connection.clone(), stop.clone());
    let timers_set = TimersSet::default();
    let consuming = stages::Consuming {
        cluster: config.kafka.clone(),
        pool: pool.clone(),
        replies: Replies::new(connection),
        workers: workers.clone(),
        stop: stop.clone(),
        producer: producer.clone(),
        instance_id: config.group_instance_id.clone(),
        timers: timers_set.clone(),
    };
    let calls = calls(&config, pool.clone(), history)?;
    let backtests = Runner::new(&pool, config.backtest_pace, stop.clone());
    let stages = [
        consuming.spawn(AppsStage),
        consuming.spawn(SettingsStage),
        consuming.spawn(InstallsStage),
        consuming.spawn(DefinitionsStage),
        consuming.spawn(DocumentsStage),
        consuming.spawn(RunsStage::new(calls)),
        consuming.spawn(CircuitsStage),
        consuming.spawn(CallbacksStage),
        consuming.spawn(CasesStage),
        consuming.spawn(BacktestsStage::new(backtests.clone())),
        consuming.spawn(WebhookEndpointsStage),
        consuming.spawn_former(
            WebhookEndpointsStage,
            topics::catalogue::FORMER_ENDPOINTS,
            "endpoints",
        ),
        consuming.spawn(OutboundStage),
        consuming.spawn(NotificationsStage),
    ];
    // Background work outside the stage contract, each job its options and a run until stop.
    let relay = Relay::new(pool.clone(), producer.clone(), workers.register("outbox"));
    let jobs = [
        job::spawn(dispatching(&config, pool.clone(), &workers)?, &stop),
        job::spawn(backtests, &stop),
        job::spawn(
            TimerRelay::<RunTimers> {
                pool: pool.clone(),
                producer: producer.clone(),
                woken: timers_set.runs(),
                worker: workers.register("run-timers"),
                timers: PhantomData,
            },
            &stop,
        ),
        job::spawn(
            TimerRelay::<CaseTimers> {
                pool: pool.clone(),
                producer: producer.clone(),
                woken: timers_set.cases(),
                worker: workers.register("case-timers"),
                timers: PhantomData,
            },
            &stop,
        ),
        job::spawn(relay, &stop),
        job::spawn(Partitions { pool: pool.clone() }, &stop),
        job::spawn(HealthMinutes { pool: pool.clone() }, &stop),
        job::spawn(
            AuditExports {
                pool: pool.clone(),
                storage: config.storage.clone(),
                every: config.audit_export_every,
            },
            &stop,
        ),
        job::spawn(KeptCounts { pool: pool.clone() }, &stop),
    ];
    gauges::register(&pool);
    let listener = TcpListener::bind(config.health_addr).await?;
    let health = Health {
        readiness: readiness(pool, redis, producer.clone()),
        metrics: process.metrics,
        workers,
        producer: producer.clone(),
    };
    serve_health(listener, health, stop).await;
    let _ = tokio::join!(
        futures::future::join_all(jobs),
        futures::future::join_all(stages),
        history_publisher
    );
    let _ = producer.flush(Duration::from_secs(5));
    Ok(())
}

/// The dispatcher of this worker: sending deliveries needs the keys their signing secrets are
/// sealed with; without `SECRET_STORE_KEY` none runs, and deliveries wait for a worker that has
/// it.
fn dispatching(
    config: &Config,
    pool: sqlx::PgPool,
    workers: &Workers,
) -> Result<Option<Dispatching>, outbound::OutboundError> {
    let Some(keys) = &config.secret_keys else {
        tracing::warn!("no SECRET_STORE_KEY: webhook deliveries wait for a worker with it");
        return Ok(None);
    };
    let dispatcher = Dispatcher::new(pool, keys.clone(), config.endpoints_loopback)?;
    let worker = workers.register("webhook-deliveries");
    Ok(Some(Dispatching { dispatcher, worker }))
}

/// What the runs stage calls apps with.
fn calls(
    config: &Config,
    pool: sqlx::PgPool,
    history: HistoryChanges,
) -> Result<Calls, reqwest::Error> {
    let runner = match &config.runner {
        Some((url, token)) => Some(runner::client::RunnerClient::new(url, token)?),
        None => None,
    };
    Ok(Calls {
        pool,
        runner,
        secret_keys: config.secret_keys.clone(),
        call_tokens: config.call_tokens.clone(),
        webhook_public_url: config.webhook_public_url.as_deref().map(Arc::from),
        blocked: config.blocked_modules.clone().into(),
        history,
    })
}

fn readiness(pool: sqlx::PgPool, redis: redis::Client, producer: topics::Producer) -> Readiness {
    Readiness::new()
        .probe("postgres", move || probes::postgres(pool.clone()))
        .probe("redis", move || probes::redis(redis.clone()))
        .probe("broker", producer.readiness_probe(PROBE_TIMEOUT))
}
