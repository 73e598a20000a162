//! The app runner: a wasmtime host for vendor app modules (SPEC §4.10, §4.11, §4.13).
//!
//! A request flows `server` (route enum, bearer) → `routes::*` (body checked by `contract`) →
//! `limits` (admission) → `module_cache` (fetch from `internal_api`, check, compile in the
//! `compiler` child, cache) → `call::run` (one fresh instance: `kernel` for the Extism ABI,
//! `host` for the platform functions, `outbound` for vendor HTTP, `wasi` for the sandboxed
//! system interface) → the answer (secrets scrubbed by `secrets`, envelope checked by
//! `contract`). `inspect` applies the module rules to uploads. `client` is the one client of
//! these routes, for the API and the pipeline, with the failure codes of SPEC §7.
//!
//! The crate is a binary; the library target exposes only what its integration tests, examples
//! (`bench`, `compile_cost`) and fuzz targets use, listed below. Without its default feature
//! `host` it is `client` alone: what the API and the pipeline link, without wasmtime and
//! cranelift (a release build of the API compiles in about half the time).

#[cfg(feature = "host")]
mod call;
pub mod client;
#[cfg(feature = "host")]
mod compiler;
#[cfg(feature = "host")]
mod config;
#[cfg(feature = "host")]
mod contract;
#[cfg(feature = "host")]
mod dependencies;
#[cfg(feature = "host")]
mod documents;
#[cfg(feature = "host")]
mod engine;
#[cfg(feature = "host")]
mod error;
#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod inspect;
#[cfg(feature = "host")]
mod internal_api;
#[cfg(feature = "host")]
mod kernel;
#[cfg(feature = "host")]
mod limits;
#[cfg(feature = "host")]
mod module_cache;
#[cfg(feature = "host")]
mod routes;
#[cfg(feature = "host")]
mod secrets;
#[cfg(feature = "host")]
mod serve;
#[cfg(feature = "host")]
mod server;
#[cfg(feature = "host")]
mod state;
#[cfg(feature = "host")]
mod wasi;

#[cfg(feature = "host")]
pub use call::run::run as run_call;
#[cfg(feature = "host")]
pub use call::{CallContext, Export};
#[cfg(feature = "host")]
pub use compiler::{Compilation, Compiler, Limits as CompileLimits, artifact};
#[cfg(feature = "host")]
pub use contract::{Definition, check as check_contract};
#[cfg(feature = "host")]
pub use engine::Engine;
#[cfg(feature = "host")]
pub use error::{Error, Issue, Refusal};
#[cfg(feature = "host")]
pub use inspect::{ModuleShape, cap_memory, check_module};
#[cfg(feature = "host")]
pub use outbound::{
    ApprovedHosts, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, OutboundClient, OutboundError,
    OutboundRequest, OutboundResponse,
};
#[cfg(feature = "host")]
pub use serve::main;
