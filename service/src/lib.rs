//! What each of the three service processes (`ingress`, `pipeline`, `runner`) is made of, so
//! that they start, configure, log, trace, serve HTTP, answer health and stop the same way. One
//! folder per concern:
//!
//! - [`config`]: the environment, read once at start-up; every problem reported together.
//! - [`telemetry`]: JSON log lines with censored keys, OTLP traces, metrics (Prometheus text
//!   and OTLP push).
//! - [`http`]: the accept loop with graceful shutdown, routing by route enum, request bodies
//!   under a limit, request ids, bearer tokens, the error envelope and the one response writer.
//! - [`health`]: liveness, readiness from named probes, the metrics exposition.
//! - [`shutdown`]: the signal every listener and loop stops on.
//! - `postgres_pool` (cargo feature `postgres`): the Postgres pool's options (when a connection
//!   is pinged before use).
//! - `redis_connection` (cargo feature `redis`): Redis connections that fail fast while it is
//!   away.
//! - `storage` (cargo feature `storage`): object storage settings and the S3 client.
//! - [`main`]: the `main` of every service, tying the above together.
//! - `testing` (cargo feature `testing`): for the services' integration tests, a service started
//!   on port 0 that reports the ports it got.
//!
//! What is a service's own (its routes, its errors, its configuration fields) stays in that
//! service; only what all of them do the same way lives here.

pub mod config;
pub mod health;
pub mod http;
pub mod labels;
#[cfg(feature = "postgres")]
pub mod postgres_pool;
mod process;
#[cfg(feature = "redis")]
pub mod redis_connection;
pub mod shutdown;
#[cfg(feature = "storage")]
pub mod storage;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;

pub use process::{Process, RunResult, main};
