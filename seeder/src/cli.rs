//! The command line of `seed-history`, the crate's binary.

use std::process::ExitCode;

use clap::Parser;

use crate::Options;

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

/// The history seeder's command line.
pub fn main() -> ExitCode {
    let cli = SeedHistory::parse();
    crate::seed(Options {
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
