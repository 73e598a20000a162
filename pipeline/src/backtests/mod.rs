//! Running a backtest (SPEC §2.7, §3.5; README "Backtests"), from the backtests stage's
//! after-commit step ([`crate::stages::backtests`]):
//! - [`lease`]: claim it (`queued` or `running` with an expired lease → `running`, from
//!   nothing), renew with each progress write, finish only while holding the lease;
//! - [`version`]: the version to replay, named rules resolved once;
//! - [`sample`]: the recorded evaluations it replays, read before the replay;
//! - [`replay`]: the version over each one, apps never called;
//! - [`summary`]: the tally, written once with `completed`;
//! - [`floor`]: `pipeline replay-floor`, the benchmark's in-process floor.
//!
//! `queued` → `running` (progress `{done, total}` written about twice a second) → `completed`
//! with the summary, or `failed` with `error` (a version that does not read; five attempts
//! whose workers all died). A worker that dies leaves `running` and a lease that expires; the
//! next attempt starts again from nothing, so no evaluation is counted twice.

mod floor;
mod lease;
mod replay;
mod sample;
mod summary;
mod version;

use std::time::{Duration, Instant};

use sqlx::PgPool;
use tracing::Instrument;
use uuid::Uuid;

use crate::Error;
pub(crate) use floor::{Options as FloorOptions, main as floor_main};
use lease::{Claim, Claimed};
use summary::Tally;

/// How often progress is written (and the lease renewed) while replaying.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Evaluations replayed between two yields to the runtime (and pauses, when paced).
pub(crate) const PACED_ROWS: usize = 100;

/// Runs backtest `id` unless it is finished, waiting out another worker's lease first.
pub(crate) async fn run(pool: &PgPool, id: Uuid, pace: Duration) -> Result<(), Error> {
    loop {
        match lease::claim(pool, id).await? {
            Claim::Finished => return Ok(()),
            Claim::HeldFor(wait) => tokio::time::sleep(wait).await,
            Claim::Claimed(claimed) => {
                let span = tracing::info_span!(
                    "backtest.run",
                    svc.tenant_id = %claimed.tenant,
                    svc.backtest_id = %id,
                    svc.definition.key = %claimed.target.key(),
                );
                return execute(pool, &claimed, pace).instrument(span).await;
            }
        }
    }
}

/// How an attempt ended.
enum Ended {
    Completed(readers::backtests::Summary),
    Failed(String),
    /// Another worker holds the lease now: this one writes nothing more.
    LeaseLost,
}

async fn execute(pool: &PgPool, claimed: &Claimed, pace: Duration) -> Result<(), Error> {
    let started = Instant::now();
    let written = match attempt(pool, claimed, pace, started).await? {
        Ended::Completed(summary) => claimed.complete(pool, &summary).await?,
        Ended::Failed(error) => claimed.fail(pool, &error).await?,
        Ended::LeaseLost => false,
    };
    if !written {
        tracing::warn!(backtest = %claimed.id, "backtest lease taken over; its result dropped");
    }
    Ok(())
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
    let recorded = sample::read(pool, claimed.tenant, &claimed.target, claimed.sample).await?;
    let total = recorded.len();
    if !claimed.progress(pool, 0, total).await? {
        return Ok(Ended::LeaseLost);
    }
    let mut tally = Tally::default();
    let mut written = Instant::now();
    for (index, evaluation) in recorded.iter().enumerate() {
        tally.add(evaluation, &version.replay(evaluation));
        let done = index + 1;
        if done % PACED_ROWS == 0 {
            if pace.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(pace).await;
            }
        }
        if written.elapsed() >= PROGRESS_EVERY && done < total {
            if !claimed.progress(pool, done, total).await? {
                return Ok(Ended::LeaseLost);
            }
            written = Instant::now();
        }
    }
    Ok(Ended::Completed(
        tally.finish(started.elapsed().as_secs_f64() * 1000.0),
    ))
}
