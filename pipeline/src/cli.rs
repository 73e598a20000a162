//! The command lines of the crate's two binaries: `pipeline` runs the worker (`serve`, the
//! default) or measures a backtest's floor (`replay-floor`); `seed-history` writes a realistic
//! invocation history for benchmarks and trials.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use topics::backtests::{Sample, Target};

use crate::seed_history;

#[derive(Debug, Parser)]
#[command(name = "pipeline", version, about = "The write path's worker")]
struct Worker {
    #[command(subcommand)]
    command: Option<WorkerCommand>,
}

#[derive(Debug, Subcommand)]
enum WorkerCommand {
    /// Consume the command topics and apply them (the default).
    Serve,
    /// Replay a version over a backtest's sample in-process, as fast as it goes, and print the
    /// rate as JSON: the floor the backtest benchmark sets the job against.
    ReplayFloor {
        #[arg(long)]
        tenant: uuid::Uuid,
        /// `rule`, `rule_set` or `workflow`.
        #[arg(long)]
        kind: String,
        #[arg(long)]
        key: String,
        #[arg(long)]
        version: i32,
        #[arg(long, default_value_t = 30)]
        last_days: i32,
        #[arg(long, default_value_t = 1000)]
        limit: i32,
        /// Replays of the sample; the fastest is reported.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: String,
    },
}

/// Write a realistic invocation history: tenants, apps, workflow runs (with their
/// `workflow_runs` rows) and statuses over the years up to now. Prints the tenants written,
/// with their rows and apps, as JSON.
#[derive(Debug, Parser)]
#[command(name = "seed-history", version)]
struct SeedHistory {
    /// Invocation rows to write.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    rows: u64,
    /// Tenants sharing them, a few large and many small.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..))]
    tenants: u16,
    /// Years of history, ending now.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    years: u32,
    /// The same seed writes the same history (tenants, apps, rows), ending at the time of the
    /// run.
    #[arg(long, default_value_t = 20_261_124)]
    seed: u64,
    /// Concurrent COPY streams, each with its own connection.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    connections: u16,
    /// Also write each run's steps (`workflow_run_steps`, about one row per invocation): the
    /// copy takes about 15 % longer.
    #[arg(long)]
    run_steps: bool,
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: String,
    #[arg(long, env = "REDIS_URL", hide_env_values = true)]
    redis_url: String,
}

/// The worker's command line.
pub fn main() -> ExitCode {
    match Worker::parse().command.unwrap_or(WorkerCommand::Serve) {
        WorkerCommand::Serve => crate::serve::main(),
        WorkerCommand::ReplayFloor {
            tenant,
            kind,
            key,
            version,
            last_days,
            limit,
            rounds,
            database_url,
        } => {
            let Some(target) = Target::of(&kind, key, version) else {
                eprintln!("replay-floor: --kind is rule, rule_set or workflow");
                return ExitCode::FAILURE;
            };
            crate::backtests::floor_main(crate::backtests::FloorOptions {
                database_url,
                tenant,
                target,
                sample: Sample { last_days, limit },
                rounds,
            })
        }
    }
}

/// The history seeder's command line.
pub fn seed_history_main() -> ExitCode {
    let cli = SeedHistory::parse();
    seed_history::main(seed_history::Options {
        rows: cli.rows,
        tenants: usize::from(cli.tenants),
        years: cli.years,
        seed: cli.seed,
        connections: usize::from(cli.connections),
        run_steps: cli.run_steps,
        database_url: cli.database_url,
        redis_url: cli.redis_url,
    })
}
