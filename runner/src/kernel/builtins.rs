//! The kernel's host-backed functions: configuration, variables, HTTP and logging. As in
//! Extism, each takes ownership of (frees) the handles it is given.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use wasmtime::{Caller, Linker};

use super::{MODULE, argument, reply, text_argument, trap};
use crate::call::CallState;
use crate::call::logs::Level;
use crate::host::vendor_http;
use outbound::OutboundRequest;

type C<'a> = Caller<'a, CallState>;

pub(crate) fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.func_wrap(MODULE, "config_get", config_get)?;
    linker.func_wrap(MODULE, "var_get", var_get)?;
    linker.func_wrap(MODULE, "var_set", var_set)?;
    linker.func_wrap_async(MODULE, "http_request", http_request)?;
    linker.func_wrap(MODULE, "http_status_code", |c: C<'_>| -> i32 {
        c.data().http_status
    })?;
    linker.func_wrap(MODULE, "http_headers", http_headers)?;
    for (name, level) in [
        ("log_trace", Level::Trace),
        ("log_debug", Level::Debug),
        ("log_info", Level::Info),
        ("log_warn", Level::Warn),
        ("log_error", Level::Error),
    ] {
        linker.func_wrap(MODULE, name, move |mut c: C<'_>, h: i64| {
            log(&mut c, level, h)
        })?;
    }
    linker.func_wrap(MODULE, "get_log_level", |_: C<'_>| -> i32 {
        Level::LOWEST_KEPT as i32
    })?;
    Ok(())
}

/// A configuration value: strings as they are, anything else as JSON text; 0 when absent.
fn config_get(mut c: C<'_>, key: i64) -> wasmtime::Result<i64> {
    let key_text = text_argument(&c, key, "config key")?;
    c.data_mut().arena.free(key as u64);
    let value = match c.data().context.config.get(&key_text) {
        None | Some(Value::Null) => return Ok(0),
        Some(Value::String(text)) => text.clone().into_bytes(),
        Some(other) => other.to_string().into_bytes(),
    };
    reply(&mut c, &value)
}

fn var_get(mut c: C<'_>, key: i64) -> wasmtime::Result<i64> {
    let key_text = text_argument(&c, key, "var key")?;
    c.data_mut().arena.free(key as u64);
    let Some(value) = c.data().vars.get(&key_text).map(<[u8]>::to_vec) else {
        return Ok(0);
    };
    reply(&mut c, &value)
}

fn var_set(mut c: C<'_>, key: i64, value: i64) -> wasmtime::Result<()> {
    let key_text = text_argument(&c, key, "var key")?;
    let bytes = argument(&c, value, "var value")?;
    let state = c.data_mut();
    state.arena.free(key as u64);
    state.arena.free(value as u64);
    state
        .vars
        .set(&key_text, &bytes)
        .map_err(|e| trap(e.to_string()))
}

/// Extism's request description (`extism_manifest::HttpRequest`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelHttpRequest {
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    method: Option<String>,
}

/// Sends a vendor request. As in Extism, a refused or failed request stops the call (modules
/// that want to handle failures use the platform's `http_send`); a non-2xx status does not.
fn http_request(
    mut c: C<'_>,
    (request, body): (i64, i64),
) -> Box<dyn Future<Output = wasmtime::Result<i64>> + Send + '_> {
    Box::new(async move {
        let description: KernelHttpRequest =
            serde_json::from_slice(&argument(&c, request, "http request")?)
                .map_err(|e| trap(format!("http request is not valid JSON: {e}")))?;
        let body_bytes = argument(&c, body, "http body")?;
        c.data_mut().arena.free(request as u64);
        c.data_mut().arena.free(body as u64);
        c.data_mut().http_status = 0;
        c.data_mut().http_headers = None;
        let outbound = OutboundRequest {
            method: description
                .method
                .unwrap_or_else(|| "GET".to_owned())
                .to_ascii_uppercase(),
            url: description.url,
            headers: description.headers.into_iter().collect(),
            body: (!body_bytes.is_empty()).then(|| body_bytes.into()),
        };
        let response = vendor_http::send(c.data_mut(), outbound, None)
            .await
            .map_err(|e| trap(format!("http request failed: {}", e.code())))?;
        c.data_mut().http_status = i32::from(response.status);
        c.data_mut().http_headers = Some(response.headers);
        reply(&mut c, &response.body)
    })
}

/// The last response's headers as a JSON object (last value wins), 0 before any response.
fn http_headers(mut c: C<'_>) -> wasmtime::Result<i64> {
    let Some(headers) = c.data().http_headers.as_ref() else {
        return Ok(0);
    };
    let object: BTreeMap<&str, &str> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let json = serde_json::to_vec(&object).map_err(|e| trap(e.to_string()))?;
    reply(&mut c, &json)
}

fn log(c: &mut C<'_>, level: Level, handle: i64) -> wasmtime::Result<()> {
    if level < Level::LOWEST_KEPT {
        c.data_mut().arena.free(handle as u64);
        return Ok(());
    }
    let message = argument(c, handle, "log message")?;
    let state = c.data_mut();
    state.arena.free(handle as u64);
    let text = String::from_utf8_lossy(&message);
    state.logs.write(&state.context.secrets, level, &text);
    Ok(())
}
