//! The platform's five functions for modules, imported from `extism:host/user` (signatures and
//! JSON shapes in `runner/ABI.md`). Unlike the kernel's `http_request`, they report failures to
//! the module as `{"error": {"code", "message"}}` instead of stopping the call.

pub(crate) mod documents;
pub(crate) mod log;
pub(crate) mod secret_get;
pub(crate) mod vendor_http;

use serde_json::{Value, json};
use wasmtime::{Caller, Linker};

use crate::call::CallState;
use crate::kernel::reply;

/// The import module of the platform functions.
pub(crate) const MODULE: &str = "extism:host/user";

pub(crate) fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    // The three that wait on the network are async: their call's fiber is suspended, not a
    // thread.
    linker.func_wrap_async(MODULE, "http_send", vendor_http::http_send)?;
    linker.func_wrap(MODULE, "secret_get", secret_get::secret_get)?;
    linker.func_wrap_async(MODULE, "document_list", documents::document_list)?;
    linker.func_wrap_async(MODULE, "document_read", documents::document_read)?;
    linker.func_wrap(MODULE, "log", log::log)?;
    Ok(())
}

/// The failure answer every platform function uses.
pub(crate) fn failure(code: &str, message: impl Into<String>) -> Value {
    json!({ "error": { "code": code, "message": message.into() } })
}

pub(crate) fn reply_json(
    caller: &mut Caller<'_, CallState>,
    value: &Value,
) -> wasmtime::Result<i64> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    reply(caller, &bytes)
}
