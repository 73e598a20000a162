//! The app runner. Its library target will hold the contract types and the one client ingress
//! and the pipeline use to call it; the binary serves the routes.

pub mod config;
pub mod dependencies;
