//! `log(entry)`: a log line from the module, either `{"level": "info", "message": "..."}` or
//! plain text (logged at info). Counted against the call's 200 lines.

use serde::Deserialize;
use wasmtime::Caller;

use crate::call::CallState;
use crate::call::logs::Level;
use crate::kernel::argument;

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    level: Option<String>,
    message: String,
}

pub(crate) fn log(c: Caller<'_, CallState>, entry: i64) -> wasmtime::Result<()> {
    let bytes = argument(&c, entry, "log entry")?;
    let (level, message) = match serde_json::from_slice::<Entry>(&bytes) {
        Ok(entry) => (
            entry
                .level
                .as_deref()
                .and_then(Level::parse)
                .unwrap_or(Level::Info),
            entry.message,
        ),
        Err(_) => (Level::Info, String::from_utf8_lossy(&bytes).into_owned()),
    };
    let mut c = c;
    let state = c.data_mut();
    state.logs.write(&state.context.secrets, level, &message);
    Ok(())
}
