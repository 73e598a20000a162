//! One file per resource; each handler takes what it needs and returns a response or an
//! [`crate::error::Error`].

pub(crate) mod app_invocations;
pub(crate) mod app_modules;
