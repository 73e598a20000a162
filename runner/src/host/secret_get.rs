//! `secret_get(name) -> value`: one of the install's secrets, 0 when it has none of that name.
//! The value never leaves the call: the answer and log lines are scrubbed of it.

use wasmtime::Caller;

use crate::call::CallState;
use crate::kernel::{reply, text_argument};

pub(crate) fn secret_get(mut c: Caller<'_, CallState>, name: i64) -> wasmtime::Result<i64> {
    let name = text_argument(&c, name, "secret name")?;
    let Some(value) = c.data().context.secrets.get(&name).map(str::to_owned) else {
        return Ok(0);
    };
    reply(&mut c, value.as_bytes())
}
