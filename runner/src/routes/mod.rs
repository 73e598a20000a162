//! The `/v1` routes. `call` holds the path the three call routes share; each route file only
//! says what its export receives and may answer.

pub mod body;
pub mod call;
pub mod handoff;
pub mod inspect;
pub mod invoke;
pub mod webhooks_handle;
