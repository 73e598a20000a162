//! The pipeline: the write path's worker. One stage per concern (`stages`: apps, installs),
//! each a consumer of its topic (`stage`): a stage applies a command in one Postgres transaction that also records the
//! command in the `inbox`, so a redelivered command is answered from the stored outcome instead
//! of being applied twice, and the `audit` rows of the effect; follow-up events go through the `outbox` in the same transaction and
//! are relayed to Kafka by the `outbox` relay. `partitions` keeps the invocation history's
//! monthly partitions ahead; `health` serves `/healthz` from the `workers` registry. The `cli`
//! runs the worker (`serve`, the `pipeline` binary). The history seeder, `seed-history`, is a
//! crate of its own (`seeder`).
//!
//! The crate is a binary; the library target exposes only what its integration tests use: the
//! stage machinery and the installs stage, run against the real broker and database.

mod audit;
mod audit_exports;
mod backtests;
mod cli;
mod config;
mod core_metrics;
mod error;
#[cfg(feature = "failpoints")]
mod failpoints;
mod gauges;
mod health;
mod health_minutes;
mod history_changes;
mod inbox;
mod job;
mod kept_counts;
mod lease;
mod outbox;
mod partitions;
mod periodic;
mod replies;
mod serve;
mod stage;
mod stages;
mod task_failures;
mod timers;
mod webhook_deliveries;
mod workers;

pub use backtests::Runner as BacktestRunner;
pub use cli::main;
pub use error::Error;
pub use replies::Replies;
pub use stage::{Context, Decoded, Stage, StageHandler};
pub use stages::backtests::BacktestsStage;
pub use stages::callbacks::CallbacksStage;
pub use stages::installs::InstallsStage;
pub use webhook_deliveries::Dispatcher as WebhookDispatcher;
