//! `pipeline replay-floor`: the benchmark floor of a backtest (BENCHMARKS.md "Backtests"): the
//! same version replayed in-process over the same sample, already in memory, as fast as this
//! process can, with no lease, progress or database write. The job's end-to-end time is set
//! against it.

use std::process::ExitCode;
use std::time::Instant;

use futures::TryStreamExt;
use serde_json::json;
use sqlx::PgPool;
use topics::backtests::{Sample, Target};
use uuid::Uuid;

use super::summary::Tally;
use super::{sample, version};
use crate::Error;

/// What to replay, and how often (the best round is reported).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) database_url: String,
    pub(crate) tenant: Uuid,
    pub(crate) target: Target,
    pub(crate) sample: Sample,
    pub(crate) rounds: u32,
}

pub(crate) fn main(options: Options) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("replay-floor: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(measure(&options)) {
        Ok(report) => {
            // The command's answer, for the benchmark script to read.
            #[allow(clippy::print_stdout)]
            {
                println!("{report}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("replay-floor: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn measure(options: &Options) -> Result<serde_json::Value, Error> {
    let pool = PgPool::connect(&options.database_url).await?;
    let version = version::load(&pool, options.tenant, &options.target)
        .await?
        .map_err(Error::Invalid)?;
    let read_started = Instant::now();
    let reads = version.reads();
    let recorded: Vec<_> = sample::read(
        &pool,
        options.tenant,
        &options.target,
        (options.sample, reads),
    )
    .await?
    .evaluations
    .try_collect()
    .await?;
    let read_ms = read_started.elapsed().as_secs_f64() * 1000.0;
    let mut best = f64::MAX;
    let mut rules = 0i64;
    for _ in 0..options.rounds.max(1) {
        let started = Instant::now();
        let mut tally = Tally::default();
        for evaluation in &recorded {
            tally.add(evaluation, &version.replay(evaluation));
        }
        let summary = tally.finish(0.0);
        best = best.min(started.elapsed().as_secs_f64() * 1000.0);
        let o = summary.outcomes;
        rules = o.pass + o.fail + o.error + o.skipped;
    }
    Ok(json!({
        "evaluations": recorded.len(),
        "ruleEvaluations": rules,
        "readMs": read_ms,
        "replayMs": best,
        "evaluationsPerSecond": recorded.len() as f64 / (best / 1000.0),
        "ruleEvaluationsPerSecond": rules as f64 / (best / 1000.0),
    }))
}
