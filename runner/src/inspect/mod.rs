//! The module rules of SPEC §4.11, applied to uploaded bytes before anything runs them.
//!
//! An upload goes through, in order:
//! 1. [`inspect_bytes`] ([`rules::check_module`]): size, header, full validation, the import
//!    allow-list, the module's own memory, the `manifest` and `invoke` exports;
//! 2. the module's `manifest` export, run with nothing (done by the caller), whose answer
//!    [`parse_manifest`] checks against SPEC §2.8 and §2.9;
//! 3. [`require_handles`]: the optional exports the manifest claims;
//! 4. [`cap_memory`]: the manifest's `memoryMiB` written into the module, whose hash then names
//!    the stored module.
//!
//! Every refusal is [`crate::Error::InvalidModule`] with the [`crate::Refusal`] of §4.11; a bad
//! manifest is a list of [`crate::Issue`]s.

pub mod manifest;
pub mod memory_cap;
pub mod rules;
pub mod strict_schema;

pub use manifest::{
    Action, ExternalIdSource, Handles, Manifest, Retry, SecretSpec, parse_manifest,
};
pub use memory_cap::cap_memory;
pub use rules::{MAX_MODULE_BYTES, ModuleShape, check_module, require_handles};

use crate::Error;

/// The checks on the bytes alone (step 1 above): the module's shape, or why it is refused.
pub fn inspect_bytes(bytes: &[u8]) -> Result<ModuleShape, Error> {
    check_module(bytes)
}
