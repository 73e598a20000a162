//! The way in of the webhook fuzz target (`ingress/fuzz`), compiled only under `cfg(fuzzing)`:
//! what the edge reads of a webhook before any module runs ([`super::declared`]) and the
//! request object a module is handed ([`super::request`]).

use http::{HeaderMap, Method};
use serde_json::{Value, json};

use super::declared::Arrived;
use super::request;

/// What the edge read of one webhook.
#[derive(Debug)]
pub struct Read {
    /// `?externalId=`, when it is an id a session can have.
    pub url_external_id: Option<String>,
    /// The external id where `declared` places it, when it is one.
    pub declared_external_id: Option<String>,
    /// The event id, were the version to declare it at the same place.
    pub event_id: Option<String>,
    /// The `request` of the module's `handle_webhook` call.
    pub request: Value,
}

/// Reads `body`, `headers` and `query` as the route does, the ids at `declared`.
pub fn webhook(headers: &HeaderMap, query: Option<&str>, body: &[u8], declared: &Value) -> Read {
    let arrived = Arrived::new(headers, query, body);
    Read {
        url_external_id: arrived.url_external_id().ok().flatten(),
        declared_external_id: arrived.declared_external_id(declared).ok().flatten(),
        event_id: arrived.event_id(&json!({"handles": {"webhookEventId": declared}})),
        request: request::of(&Method::POST, headers, query, body),
    }
}
