//! `POST /v1/invoke`: runs an action (`invoke` export) with the install's context.

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

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InvokeRequest {
    #[serde(flatten)]
    install: Install,
    timeout_ms: u64,
    call_token: Option<String>,
}

pub async fn handle(
    state: &State,
    request: Request<Incoming>,
    _request_id: &str,
) -> Result<Response<Body>, Error> {
    let body = body::json(request).await?;
    let parsed: InvokeRequest = call::parse(Definition::InvokeRequest, &body)?;
    let mut input = json!({
        "call": body["call"],
        "action": body["action"],
        "config": body["config"],
        "input": body["input"],
    });
    if let Some(key) = body.get("idempotencyKey") {
        input["idempotencyKey"] = key.clone();
    }
    call::execute(
        state,
        Plan {
            export: Export::Invoke,
            install: parsed.install,
            input,
            timeout: Duration::from_millis(parsed.timeout_ms),
            answer: Definition::InvokeModuleAnswer,
            call_token: parsed.call_token,
        },
    )
    .await
}
