//! `seed-history`: writes a realistic invocation history for benchmarks and for
//! analysts trying the product — tenants of very different sizes, their apps, workflow runs
//! with retries, every status, payloads of varying size, `--years` of timestamps ending now.
//!
//! The same options and seed write the same history (shifted to end at the time of the run):
//! tenants and apps come from the seed (`population`), and each hour of the `timeline` from
//! its own seeded generator (`history`). The hours are split into consecutive stretches, one
//! per connection, each copied in batches (`stream`, `copy`) through `app_invocations` itself,
//! so the rollup triggers keep `app_invocation_counts` and `app_invocation_minutes` exact.
//! Each workflow run is also written, in its invocations' batch, as its `workflow_runs` row in
//! the state its invocations leave it in at the end of the span (`run`), so readers can bound
//! a run's invocations by its lifetime; with `--run-steps`, also a `workflow_run_steps` row per
//! step it reached (about one per invocation: off by default, for the copying time it adds).
//! Beside each run go its rule evaluations (`evaluation`: rule set `screening` once its first
//! step is answered, `risk-checks` once it completed), with the data its rules saw, and every
//! tenant gets those rule sets' definitions, so backtests have history to replay.
//! A batch commits on its own: a failed run leaves the batches before it, counted.
//!
//! A crate of its own, outside the worker: it writes the tables directly (COPY), reads the
//! invocation statuses and the read caches' channel from `readers`, and records rule outcomes
//! through the engine's evaluator (`topics::definitions::rules`). Its command line is `cli`.

mod attempt;
mod catalogue;
mod cli;
mod copy;
mod error;
mod evaluation;
mod finish;
mod history;
mod partitions;
mod payload;
mod population;
mod progress;
mod random;
mod run;
mod stream;
mod summary;
mod timeline;
mod vocabulary;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use chrono::Utc;
use sqlx::{Connection, PgConnection};

pub use cli::main;
use error::Error;
use history::History;
use population::Population;
use summary::Summary;
use timeline::Timeline;

/// What to seed (the command line's `seed-history`).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) rows: u64,
    pub(crate) tenants: usize,
    pub(crate) years: u32,
    pub(crate) seed: u64,
    pub(crate) connections: usize,
    /// Also write the runs' `workflow_run_steps`.
    pub(crate) run_steps: bool,
    pub(crate) database_url: String,
    pub(crate) redis_url: String,
}

/// The history to write: who calls, when, and whether the runs' steps are written too.
#[derive(Debug)]
struct Plan {
    seed: u64,
    population: Population,
    timeline: Timeline,
    run_steps: bool,
    /// The rule sets of the runs' evaluations.
    rule_book: Arc<evaluation::RuleBook>,
}

impl Plan {
    fn new(options: &Options, end: i64) -> Self {
        Self {
            seed: options.seed,
            population: Population::new(options.seed, options.tenants, options.rows),
            timeline: Timeline::new(end, options.years, options.rows),
            run_steps: options.run_steps,
            rule_book: Arc::new(evaluation::RuleBook::new()),
        }
    }

    fn history(&self) -> History<'_> {
        History::new(self.seed, &self.population, &self.timeline)
    }
}

/// Runs the command: progress on stderr, the summary as JSON on stdout.
pub(crate) fn seed(options: Options) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("seed-history: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(summary) => {
            let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
            #[allow(clippy::print_stdout)]
            {
                println!("{json}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("seed-history: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<Summary, Error> {
    let started = Instant::now();
    let plan = Arc::new(Plan::new(&options, Utc::now().timestamp_micros()));
    let mut connection = PgConnection::connect(&options.database_url).await?;
    partitions::ensure(&mut connection, plan.timeline.start(), plan.timeline.end()).await?;
    evaluation::define(&mut connection, &plan.population, &plan.rule_book).await?;

    let written = Arc::new(AtomicU64::new(0));
    let progress = tokio::spawn(progress::report(written.clone(), options.rows, started));
    let streams = plan
        .timeline
        .split(options.connections)
        .into_iter()
        .map(|hours| stream::write(&options.database_url, plan.clone(), hours, written.clone()));
    let tallies = futures::future::try_join_all(streams).await;
    progress.abort();
    let rows_per_tenant = add_up(&tallies?);

    finish::rebuild_indexes(&mut connection, rows_per_tenant.iter().sum()).await?;
    finish::analyze(&mut connection).await?;
    finish::tell_read_caches(&options.redis_url).await?;
    Ok(Summary::new(&plan, &rows_per_tenant, started.elapsed()))
}

/// The streams' rows per tenant, added up.
fn add_up(tallies: &[Vec<u64>]) -> Vec<u64> {
    let tenants = tallies.first().map_or(0, Vec::len);
    (0..tenants)
        .map(|tenant| tallies.iter().map(|tally| tally[tenant]).sum())
        .collect()
}

#[cfg(test)]
mod tests;
