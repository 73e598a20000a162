//! `POST /v1/handoff`: asks the module how the applicant continues a pending session
//! (`handoff` export, 15 s deadline).

use http::{Request, Response};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::json;

use super::body;
use super::call::{self, Install, Plan};
use super::webhooks_handle::DEADLINE;
use crate::Error;
use crate::call::Export;
use crate::contract::Definition;
use crate::response::Body;
use crate::state::State;

#[derive(Debug, Deserialize)]
struct HandoffRequest {
    #[serde(flatten)]
    install: Install,
}

pub async fn handle(
    state: &State,
    request: Request<Incoming>,
    _request_id: &str,
) -> Result<Response<Body>, Error> {
    let body = body::json(request).await?;
    let parsed: HandoffRequest = call::parse(Definition::HandoffRequest, &body)?;
    let input = json!({
        "call": body["call"],
        "config": body["config"],
        "externalId": body["externalId"],
    });
    call::execute(
        state,
        Plan {
            export: Export::Handoff,
            install: parsed.install,
            input,
            timeout: DEADLINE,
            answer: Definition::HandoffModuleAnswer,
            call_token: None,
        },
    )
    .await
}
