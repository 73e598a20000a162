//! The command line: `pipeline` runs the worker (`serve`, the default), `pipeline seed-history`
//! writes a realistic invocation history for benchmarks and trials.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::seed_history;

#[derive(Debug, Parser)]
#[command(name = "pipeline", version, about = "The write path's worker")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Consume the command topics and apply them (the default).
    Serve,
    /// Write a realistic invocation history: tenants, apps, workflow runs (with their
    /// `workflow_runs` rows) and statuses over the years up to now. Prints the tenants
    /// written, with their rows and apps, as JSON.
    SeedHistory {
        /// Invocation rows to write.
        #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        rows: u64,
        /// Tenants sharing them, a few large and many small.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..))]
        tenants: u16,
        /// Years of history, ending now.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
        years: u32,
        /// The same seed writes the same history (tenants, apps, rows), ending at the time of
        /// the run.
        #[arg(long, default_value_t = 20_261_124)]
        seed: u64,
        /// Concurrent COPY streams, each with its own connection.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
        connections: u16,
        /// Also write each run's steps (`workflow_run_steps`, about one row per invocation):
        /// the copy takes about 15 % longer.
        #[arg(long)]
        run_steps: bool,
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: String,
        #[arg(long, env = "REDIS_URL", hide_env_values = true)]
        redis_url: String,
    },
}

/// Runs the command line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => crate::serve::main(),
        Command::SeedHistory {
            rows,
            tenants,
            years,
            seed,
            connections,
            run_steps,
            database_url,
            redis_url,
        } => seed_history::main(seed_history::Options {
            rows,
            tenants: usize::from(tenants),
            years,
            seed,
            connections: usize::from(connections),
            run_steps,
            database_url,
            redis_url,
        }),
    }
}
