//! `POST /v1/webhooks/handle`: lets the module read a vendor webhook (`handle_webhook` export).

use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use service::http::Body;

use super::call::{self, Route};
use crate::Error;
use crate::call::Export;
use crate::contract::Definition;
use crate::state::State;

/// Deadline of `handle_webhook` and `handoff` (SPEC §8).
pub(crate) const DEADLINE: Duration = Duration::from_secs(15);

const ROUTE: Route = Route {
    export: Export::HandleWebhook,
    request: Definition::WebhookRequest,
    answer: Definition::WebhookModuleAnswer,
    input_fields: &["call", "config", "request"],
    deadline: Some(DEADLINE),
};

pub(crate) async fn handle(
    state: &State,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    call::handle(state, request, &ROUTE).await
}
