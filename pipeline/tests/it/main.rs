#![allow(unreachable_pub)]

//! The pipeline's integration tests, one binary, against the real broker, Postgres and Redis of
//! the stack (`./stack up`).

mod backtests;
mod callback_burst;
mod dead_letters;
mod evaluations;
mod group_churn;
mod install_burst;
mod partitions;
mod redelivery;
mod support;
mod task_failures;
mod webhook_deliveries;
