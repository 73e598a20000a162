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

pub mod client;

/// Items of the wasmtime host: compiled with the feature `host` only.
macro_rules! host {
    ($($item:item)*) => { $( #[cfg(feature = "host")] $item )* };
}

host! {
    mod call;
    mod compiler;
    mod config;
    mod contract;
    mod dependencies;
    mod documents;
    mod engine;
    mod error;
    mod host;
    mod inspect;
    mod internal_api;
    mod kernel;
    mod limits;
    mod module_cache;
    mod routes;
    mod secrets;
    mod serve;
    mod server;
    mod state;
    mod wasi;

    pub use call::run::run as run_call;
    pub use call::{CallContext, Export};
    pub use compiler::{Compilation, Compiler, Limits as CompileLimits, artifact};
    pub use contract::{Definition, check as check_contract};
    pub use engine::Engine;
    pub use error::{Error, Issue, Refusal};
    pub use inspect::{ModuleShape, cap_memory, check_module};
    pub use outbound::{
        ApprovedHosts, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, OutboundClient, OutboundError,
        OutboundRequest, OutboundResponse,
    };
    pub use serve::main;
}
