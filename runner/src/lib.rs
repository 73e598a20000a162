//! The app runner: a wasmtime host for vendor app modules (SPEC §4.10, §4.11, §4.13).
//!
//! A request flows `server` → `routes::*` (body checked by `contract`) → `limits` (admission)
//! → `module_cache` (fetch from `internal_api`, check, compile in the `compiler` child, cache) →
//! `call::run` (one fresh instance: `kernel` for the Extism ABI, `host` for the platform
//! functions, `outbound` for vendor HTTP, `wasi` for the sandboxed system interface) → the
//! answer (secrets scrubbed by `secrets`, envelope checked by `contract`). `inspect` applies the
//! module rules to uploads.

pub mod call;
pub mod compiler;
pub mod config;
pub mod contract;
pub mod dependencies;
pub mod documents;
pub mod engine;
pub mod error;
pub mod host;
pub mod inspect;
pub mod internal_api;
pub mod kernel;
pub mod limits;
pub mod module_cache;
pub mod outbound;
pub mod response;
pub mod routes;
pub mod secrets;
pub mod server;
pub mod state;
pub mod wasi;

pub use error::{Error, Issue, Refusal};
