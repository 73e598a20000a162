//! The command line of the crate's binary, `pipeline`: runs the worker (`serve`, the default)
//! or measures a backtest's floor (`replay-floor`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use topics::backtests::{Sample, Target};

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
