//! The HTTP pieces every listener shares. A request goes: [`serve`] (accept loop) → the
//! listener's [`router::Router`] (its route enum) → [`request_id`] → [`bearer`] where the route
//! needs a token → [`body`] under the route's limit → the handler → [`response`] (the one
//! writer of answers and of the `envelope`) → [`observe`] (span, duration, access line).

pub mod bearer;
pub mod body;
mod envelope;
pub mod exposition;
pub mod observe;
pub mod request_id;
pub mod response;
pub mod router;
mod serve;

pub use envelope::{ErrorBody, ErrorEnvelope, HttpError, Unrouted};
pub use response::Body;
pub use router::{Route, Routed, Router};
pub use serve::serve;
