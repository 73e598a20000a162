//! The Extism kernel (`extism:host/env`), implemented on the host so that modules built with
//! the official Extism PDKs run unchanged (ARCHITECTURE.md "Runner"; semantics in
//! `runner/ABI.md`). Handles are `i64` offsets into the call's [`arena::Arena`], 0 = null.

pub(crate) mod arena;
pub(crate) mod builtins;
pub(crate) mod memory;

use wasmtime::{Caller, Linker};

use crate::call::CallState;

/// The import module of the kernel.
pub(crate) const MODULE: &str = "extism:host/env";

/// Defines every kernel function on `linker`.
pub(crate) fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    memory::link(linker)?;
    builtins::link(linker)?;
    Ok(())
}

/// Why a host function stopped the call (a trap whose message the caller may see).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HostTrap(pub String);

pub(crate) fn trap(message: impl Into<String>) -> wasmtime::Error {
    wasmtime::Error::new(HostTrap(message.into()))
}

/// The bytes of the argument block `handle` (empty for 0); a handle that is not the start of a
/// live block stops the call, as in Extism.
pub(crate) fn argument(
    caller: &Caller<'_, CallState>,
    handle: i64,
    what: &str,
) -> wasmtime::Result<Vec<u8>> {
    caller
        .data()
        .arena
        .block(handle as u64)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| trap(format!("invalid handle for {what}")))
}

/// A UTF-8 argument.
pub(crate) fn text_argument(
    caller: &Caller<'_, CallState>,
    handle: i64,
    what: &str,
) -> wasmtime::Result<String> {
    String::from_utf8(argument(caller, handle, what)?)
        .map_err(|_| trap(format!("{what} is not UTF-8")))
}

/// Puts `data` in the arena and answers its handle (0 for empty data).
pub(crate) fn reply(caller: &mut Caller<'_, CallState>, data: &[u8]) -> wasmtime::Result<i64> {
    caller
        .data_mut()
        .arena
        .put(data)
        .map(|handle| handle as i64)
        .ok_or_else(|| trap("kernel memory exhausted"))
}
