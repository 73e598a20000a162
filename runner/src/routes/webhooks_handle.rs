//! `POST /v1/webhooks/handle`: lets the module read a vendor webhook (`handle_webhook` export,
//! 15 s deadline).

use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::json;

use super::body;
use super::call::{self, Install, Plan};
use crate::Error;
use crate::call::Export;
use crate::contract::Definition;
use crate::response::Body;
use crate::state::State;

/// Deadline of `handle_webhook` and `handoff` (SPEC §8).
pub const DEADLINE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
struct WebhookRequest {
    #[serde(flatten)]
    install: Install,
}

pub async fn handle(
    state: &State,
    request: Request<Incoming>,
    _request_id: &str,
) -> Result<Response<Body>, Error> {
    let body = body::json(request).await?;
    let parsed: WebhookRequest = call::parse(Definition::WebhookRequest, &body)?;
    let input = json!({
        "call": body["call"],
        "config": body["config"],
        "request": body["request"],
    });
    call::execute(
        state,
        Plan {
            export: Export::HandleWebhook,
            install: parsed.install,
            input,
            timeout: DEADLINE,
            answer: Definition::WebhookModuleAnswer,
            call_token: None,
        },
    )
    .await
}
