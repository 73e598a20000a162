//! `GET /webhook-event-types` (docs/outbound-webhooks.md): the catalogue of event types a
//! webhook endpoint may subscribe to, each with what it means.

use http::{Response, StatusCode};
use service::http::{Body, response};
use topics::outbound::EVENT_TYPES;

use crate::call::Call;
use crate::error::Error;

pub(crate) async fn list(_: Call<'_>) -> Result<Response<Body>, Error> {
    let items = serde_json::json!({ "items": EVENT_TYPES });
    Ok(response::json(StatusCode::OK, &items))
}
