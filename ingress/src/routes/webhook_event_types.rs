//! `GET /webhook-event-types` (docs/outbound-webhooks.md): the catalogue of event types a
//! webhook endpoint may subscribe to, each with what it means.

use http::{Response, StatusCode};
use service::http::{Body, response};
use topics::outbound::EVENT_TYPES;

pub(crate) fn list() -> Response<Body> {
    response::json(StatusCode::OK, &serde_json::json!({ "items": EVENT_TYPES }))
}
