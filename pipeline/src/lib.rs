//! The pipeline: one stage per concern, each a consumer of its topic. A stage applies a command
//! in one Postgres transaction that also records the command in the [`inbox`], so a redelivered
//! command is answered from the stored outcome instead of being applied twice; follow-up events
//! go through the [`outbox`] in the same transaction and are relayed to Kafka.

pub mod config;
pub mod error;
pub mod inbox;
pub mod outbox;
pub mod partitions;
pub mod replies;
pub mod stage;

pub use error::Error;
pub use stage::{Stage, StageHandler};
