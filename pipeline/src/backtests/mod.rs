//! Running backtests (SPEC §2.7, §3.5; docs/definitions-and-runs.md "Backtests"):
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

mod claim;
mod floor;
mod replay;
mod sample;
mod summary;
mod version;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::job::Job;
use crate::{Error, periodic};
use claim::Claimed;
pub(crate) use claim::reserve;
pub(crate) use floor::{Options as FloorOptions, main as floor_main};
use summary::Tally;

/// How often progress is written (and the lease renewed) while replaying.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Evaluations replayed between two yields to the runtime (and pauses, when paced).
pub(crate) const PACED_ROWS: usize = 100;

/// How often a worker looks for backtests whose lease expired.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// Backtests one worker runs at once: each takes a core while it replays.
const SLOTS: usize = 2;

/// How often a running backtest's lease is renewed, whatever the attempt is doing (reading a
/// version, counting its sample, waiting for the first row).
const HEARTBEAT: Duration = Duration::from_secs(5);

/// Runs the backtests of this worker.
#[derive(Debug, Clone)]
pub struct Runner {
    /// Connections of the backtests' own (a sample's read holds one while the replay runs),
    /// so the stages never wait for one behind a backtest.
    pool: PgPool,
    /// A pause after every [`PACED_ROWS`] replayed evaluations (`BACKTEST_PACE_MS`), leaving
    /// the cores to the other stages on a small machine.
    pace: Duration,
    slots: Arc<Semaphore>,
    /// The worker stopping: running backtests give their lease back, their attempt uncounted.
    stop: CancellationToken,
}

impl Runner {
    /// A runner on connections of its own, made like `pool`'s.
    pub fn new(pool: &PgPool, pace: Duration, stop: CancellationToken) -> Self {
        let connections = u32::try_from(2 * SLOTS).unwrap_or(4);
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(Duration::from_secs(30))
            .connect_lazy_with((*pool.connect_options()).clone());
        Self {
            pool,
            pace,
            slots: Arc::new(Semaphore::new(SLOTS)),
            stop,
        }
    }

    /// Starts backtest `id`, recorded by this worker under `lease`, in the background.
    pub(crate) fn start(&self, id: Uuid, lease: Uuid) {
        let runner = self.clone();
        tokio::spawn(async move {
            let Ok(slot) = runner.slots.clone().acquire_owned().await else {
                return;
            };
            match claim::claim_reserved(&runner.pool, id, lease).await {
                Ok(Some(claimed)) => runner.attempt(claimed, slot).await,
                // The reservation expired while the slots were busy: a sweep takes it.
                Ok(None) => {}
                Err(error) => tracing::warn!(backtest = %id, %error, "backtest not started"),
            }
        });
    }

    /// Once the worker stops: waits (10 s at most) for its running backtests to give their
    /// leases back.
    pub async fn drained(&self) {
        let all = u32::try_from(SLOTS).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.slots.acquire_many(all)).await;
    }

    async fn sweep_once(&self) -> Result<(), Error> {
        let failed = claim::give_up_exhausted(&self.pool).await?;
        if failed > 0 {
            tracing::warn!(failed, "backtests failed after their last attempt");
        }
        while let Ok(slot) = self.slots.clone().try_acquire_owned() {
            let Some(claimed) = claim::claim_next(&self.pool).await? else {
                return Ok(());
            };
            let runner = self.clone();
            tokio::spawn(async move { runner.attempt(claimed, slot).await });
        }
        Ok(())
    }

    async fn attempt(&self, claimed: Claimed, _slot: OwnedSemaphorePermit) {
        let span = tracing::info_span!(
            "backtest.run",
            svc.tenant_id = %claimed.tenant,
            svc.backtest_id = %claimed.id,
            svc.definition.key = %claimed.target.key(),
        );
        let lost = CancellationToken::new();
        let heartbeat = tokio::spawn(heartbeat(self.pool.clone(), claimed.clone(), lost.clone()));
        let ended = tokio::select! {
            ended = self.execute(&claimed, &lost).instrument(span) => Some(ended),
            () = self.stop.cancelled() => None,
        };
        heartbeat.abort();
        let released = match ended {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                tracing::warn!(backtest = %claimed.id, %error, "backtest attempt failed");
                claimed.release(&self.pool, &error.to_string()).await
            }
            // Stopping: the next worker starts it at once, this attempt not counted.
            None => claimed.give_back(&self.pool).await,
        };
        if let Err(error) = released {
            tracing::warn!(backtest = %claimed.id, %error, "backtest lease not released");
        }
    }

    async fn execute(&self, claimed: &Claimed, lost: &CancellationToken) -> Result<(), Error> {
        let started = Instant::now();
        let written = match attempt(&self.pool, claimed, (self.pace, lost), started).await? {
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

/// The job: starts backtests whose lease expired, and fails those out of attempts, every two
/// seconds until the worker stops (the runner's own `stop`, which its running backtests watch
/// too), then waits for its running ones to give their leases back.
impl Job for Runner {
    async fn run(self, stop: CancellationToken) {
        periodic::every(SWEEP_EVERY, SWEEP_EVERY, stop, || async {
            if let Err(error) = self.sweep_once().await {
                tracing::warn!(%error, "backtests not swept");
            }
        })
        .await;
        self.drained().await;
    }
}

/// Renews `claimed`'s lease every [`HEARTBEAT`] until aborted; cancels `lost` once the lease
/// is another worker's.
async fn heartbeat(pool: PgPool, claimed: Claimed, lost: CancellationToken) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        match claimed.renew(&pool).await {
            Ok(true) => {}
            Ok(false) => {
                lost.cancel();
                return;
            }
            Err(error) => {
                tracing::warn!(backtest = %claimed.id, %error, "backtest lease not renewed")
            }
        }
    }
}

/// How an attempt ended.
enum Ended {
    /// The summary, and the evaluations it counted.
    Completed(topics::backtests::Summary, usize),
    Failed(String),
    /// Another worker holds the lease now: this one writes nothing more.
    LeaseLost,
}

async fn attempt(
    pool: &PgPool,
    claimed: &Claimed,
    (pace, lost): (Duration, &CancellationToken),
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
        if lost.is_cancelled() {
            return Ok(Ended::LeaseLost);
        }
        tally.add(&evaluation, &version.replay(&evaluation));
        done += 1;
        if done % PACED_ROWS == 0 {
            if pace.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(pace).await;
            }
        }
        // Evaluations recorded since the count may add to a sample short of its limit: the
        // completion writes what was done.
        if written.elapsed() >= PROGRESS_EVERY && done < total {
            if !claimed.progress(pool, done, total).await? {
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
