//! The `/v1` routes. `call` holds the path the three call routes share; each route file only
//! says what its export receives and may answer.

pub(crate) mod body;
pub(crate) mod call;
pub(crate) mod handoff;
pub(crate) mod inspect;
pub(crate) mod invoke;
pub(crate) mod webhooks_handle;
