//! Loading compiled artifacts: the one place the runner uses `unsafe`.
//!
//! wasmtime runs a deserialized artifact's machine code without checking it, so an artifact
//! must come from `precompile_module`/`serialize` of a compatible engine. Ours come from two
//! places only: the compiler child (this very binary, `/proc/self/exe`, over a pipe only this
//! process holds, with an engine built from the same `compilation_config`) and the disk cache
//! (files this process wrote atomically into a directory created mode 0700 for its user, named
//! with the engine's compatibility hash). wasmtime itself refuses artifacts of another version
//! or configuration. The child compiled untrusted wasm, exactly as an in-process compilation
//! would have; it only changes which process's memory cranelift used.

use std::path::Path;

use wasmtime::{Engine, Module};

/// Loads an artifact the compiler child answered.
#[allow(unsafe_code)]
pub fn load(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Module> {
    // SAFETY: see the module documentation: the bytes are the compiler child's answer.
    unsafe { Module::deserialize(engine, artifact) }
}

/// Loads an artifact from the disk cache.
#[allow(unsafe_code)]
pub fn load_file(engine: &Engine, path: &Path) -> wasmtime::Result<Module> {
    // SAFETY: see the module documentation: the file was written by the disk cache.
    unsafe { Module::deserialize_file(engine, path) }
}
