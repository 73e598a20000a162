//! The API: a hand-routed hyper server with a public listener (routes, auth, rate limits,
//! request ids, the error envelope) and an internal listener for the runner.

pub mod auth;
pub mod body;
pub mod config;
pub mod error;
pub mod health;
pub mod internal;
pub mod object_store;
pub mod observe;
pub mod public;
pub mod query;
pub mod rate_limit;
pub mod read_cache;
pub mod read_cache_listener;
pub mod response;
pub mod router;
pub mod routes;
pub mod state;
