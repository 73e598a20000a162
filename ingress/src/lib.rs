//! The API: a hand-routed hyper server with a public listener (`public`: routes, auth, rate
//! limits, request ids, the error envelope, validation, reads) and an internal listener for the
//! runner (`internal`: module and document fetch). `cli` is the command line: serve (the
//! default) or mint a development token.
//!
//! The crate is a binary; the library target exposes only what its integration tests use: the
//! command line's `main`, token minting and the object store.

mod auth;
mod body;
mod call;
mod catalogue;
mod cli;
mod client_address;
mod commands;
mod comment;
mod config;
mod directory;
mod error;
mod external_id_sources;
mod health;
mod install_secrets;
mod internal;
mod object_store;
mod path;
mod public;
mod query;
mod rate_limit;
mod read_cache;
mod read_cache_listener;
mod reconnecting;
mod recorded_events;
mod replies;
mod routes;
mod serve;
mod session_call;
mod state;
mod stored_versions;
mod version_schemas;

pub use auth::claims::Kind;
pub use auth::mint::{TokenRequest, mint};
pub use auth::permission::Role;
pub use cli::main;
pub use config::StorageConfig;
pub use object_store::ObjectStore;
/// The webhook fuzz target's way in (`ingress/fuzz`).
#[cfg(fuzzing)]
pub use routes::webhooks::fuzzing;
