//! One file per resource; each handler takes what it needs and returns a response or an
//! [`crate::error::Error`].

pub mod app_invocations;
pub mod app_modules;
