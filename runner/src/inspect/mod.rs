//! The module rules of SPEC §4.11, applied to uploaded bytes before anything runs them.
//!
//! An upload goes through, in order:
//! 1. [`check_module`]: size, header, full validation, the import
//!    allow-list, the module's own memory, the `manifest` and `invoke` exports;
//! 2. the module's `manifest` export, run with nothing (done by the caller), whose answer
//!    [`parse_manifest`] checks against SPEC §2.8 and §2.9;
//! 3. [`require_handles`]: the optional exports the manifest claims;
//! 4. [`cap_memory`]: the manifest's `memoryMiB` written into the module, whose hash then names
//!    the stored module.
//!
//! Every refusal is [`crate::Error::InvalidModule`] with the [`crate::Refusal`] of §4.11; a bad
//! manifest is a list of [`crate::Issue`]s.

pub(crate) mod memory_cap;
pub(crate) mod rules;

pub use memory_cap::cap_memory;
pub(crate) use rules::require_handles;
pub use rules::{ModuleShape, check_module};
pub(crate) use schema::manifest::parse_manifest;
