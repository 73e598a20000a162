//! Running backtests (SPEC §2.7, §3.5; README "Backtests"):
//! - [`lease`]: the backtests stage records a backtest `queued` with a lease reserved for
//!   the worker that recorded it, which starts it at once ([`Runner::start`]); every worker's
//!   [`Runner::sweep`] starts any whose lease expired (its worker died, or the database went
//!   away mid-way); progress writes renew the lease; only the lease's holder finishes it;
//! - [`version`]: the version to replay, named rules resolved once per attempt;
//! - [`sample`]: the recorded evaluations it replays, counted, then replayed as they arrive;
//! - [`replay`]: the version over each one, apps never called;
//! - [`summary`]: the tally, written once with `completed`;
//! - [`floor`]: `pipeline replay-floor`, the benchmark's in-process floor.
//!
//! `queued` → `running` (progress `{done, total}` written about twice a second) → `completed`
//! with the summary, or `failed` with `error` (a version that does not read; five attempts
//! that all ended without a result). Each attempt starts from nothing, so no evaluation is
//! counted twice. Backtests run beside the stages, never in a partition's lane: a long one
//! holds up no other command.

mod floor;
mod lease;
mod replay;
mod sample;
mod summary;
mod version;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use sqlx::PgPool;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::{Error, periodic};
pub(crate) use floor::{Options as FloorOptions, main as floor_main};
use lease::Claimed;
pub(crate) use lease::reserve;
use summary::Tally;

/// How often progress is written (and the lease renewed) while replaying.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Evaluations replayed between two yields to the runtime (and pauses, when paced).
pub(crate) const PACED_ROWS: usize = 100;

/// How often a worker looks for backtests whose lease expired.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// Backtests one worker runs at once: each takes a core while it replays.
const SLOTS: usize = 2;

/// Runs the backtests of this worker.
#[derive(Debug, Clone)]
pub struct Runner {
    pool: PgPool,
    /// A pause after every [`PACED_ROWS`] replayed evaluations (`BACKTEST_PACE_MS`), leaving
    /// the cores to the other stages on a small machine.
    pace: Duration,
    slots: Arc<Semaphore>,
}

impl Runner {
    pub fn new(pool: PgPool, pace: Duration) -> Self {
        Self {
            pool,
            pace,
            slots: Arc::new(Semaphore::new(SLOTS)),
        }
    }

    /// Starts backtest `id`, recorded by this worker under `lease`, in the background.
    pub(crate) fn start(&self, id: Uuid, lease: Uuid) {
        let runner = self.clone();
        tokio::spawn(async move {
            let Ok(slot) = runner.slots.clone().acquire_owned().await else {
                return;
            };
            match lease::claim_reserved(&runner.pool, id, lease).await {
                Ok(Some(claimed)) => runner.run(claimed, slot).await,
                // The reservation expired while the slots were busy: a sweep takes it.
                Ok(None) => {}
                Err(error) => tracing::warn!(backtest = %id, %error, "backtest not started"),
            }
        });
    }

    /// Starts backtests whose lease expired, and fails those out of attempts, every two
    /// seconds until stopped.
    pub(crate) async fn sweep(self, stop: CancellationToken) {
        periodic::every(SWEEP_EVERY, SWEEP_EVERY, stop, || async {
            if let Err(error) = self.sweep_once().await {
                tracing::warn!(%error, "backtests not swept");
            }
        })
        .await;
    }

    async fn sweep_once(&self) -> Result<(), Error> {
        let failed = lease::give_up_exhausted(&self.pool).await?;
        if failed > 0 {
            tracing::warn!(failed, "backtests failed after their last attempt");
        }
        while let Ok(slot) = self.slots.clone().try_acquire_owned() {
            let Some(claimed) = lease::claim_next(&self.pool).await? else {
                return Ok(());
            };
            let runner = self.clone();
            tokio::spawn(async move { runner.run(claimed, slot).await });
        }
        Ok(())
    }

    async fn run(&self, claimed: Claimed, _slot: OwnedSemaphorePermit) {
        let span = tracing::info_span!(
            "backtest.run",
            svc.tenant_id = %claimed.tenant,
            svc.backtest_id = %claimed.id,
            svc.definition.key = %claimed.target.key(),
        );
        if let Err(error) = self.execute(&claimed).instrument(span).await {
            tracing::warn!(backtest = %claimed.id, %error, "backtest attempt failed");
            if let Err(error) = claimed.release(&self.pool, &error.to_string()).await {
                tracing::warn!(backtest = %claimed.id, %error, "backtest lease not released");
            }
        }
    }

    async fn execute(&self, claimed: &Claimed) -> Result<(), Error> {
        let started = Instant::now();
        let written = match attempt(&self.pool, claimed, self.pace, started).await? {
            Ended::Completed(summary, done) => claimed.complete(&self.pool, &summary, done).await?,
            Ended::Failed(error) => claimed.fail(&self.pool, &error).await?,
            Ended::LeaseLost => false,
        };
        if !written {
            tracing::warn!(backtest = %claimed.id, "backtest lease taken over; its result dropped");
        }
        Ok(())
    }
}

/// How an attempt ended.
enum Ended {
    /// The summary, and the evaluations it counted.
    Completed(readers::backtests::Summary, usize),
    Failed(String),
    /// Another worker holds the lease now: this one writes nothing more.
    LeaseLost,
}

async fn attempt(
    pool: &PgPool,
    claimed: &Claimed,
    pace: Duration,
    started: Instant,
) -> Result<Ended, Error> {
    let version = match version::load(pool, claimed.tenant, &claimed.target).await? {
        Ok(version) => version,
        Err(error) => return Ok(Ended::Failed(error)),
    };
    let reads = version.reads();
    let sample::Reading {
        total,
        mut evaluations,
    } = sample::read(
        pool,
        claimed.tenant,
        &claimed.target,
        (claimed.sample, reads),
    )
    .await?;
    if !claimed.progress(pool, 0, total).await? {
        return Ok(Ended::LeaseLost);
    }
    let mut tally = Tally::default();
    let mut written = Instant::now();
    let mut done = 0;
    while let Some(evaluation) = evaluations.try_next().await? {
        tally.add(&evaluation, &version.replay(&evaluation));
        done += 1;
        if done % PACED_ROWS == 0 {
            if pace.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(pace).await;
            }
        }
        // Evaluations recorded since the count may add to a sample short of its limit.
        if written.elapsed() >= PROGRESS_EVERY && done < total {
            if !claimed.progress(pool, done, total.max(done)).await? {
                return Ok(Ended::LeaseLost);
            }
            written = Instant::now();
        }
    }
    Ok(Ended::Completed(
        tally.finish(started.elapsed().as_secs_f64() * 1000.0),
        done,
    ))
}
