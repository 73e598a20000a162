//! `POST /v1/handoff`: asks the module how the applicant continues a pending session
//! (`handoff` export).

use http::{Request, Response};
use hyper::body::Incoming;
use service::http::Body;

use super::call::{self, Route};
use super::webhooks_handle::DEADLINE;
use crate::Error;
use crate::call::Export;
use crate::contract::Definition;
use crate::state::State;

const ROUTE: Route = Route {
    export: Export::Handoff,
    request: Definition::HandoffRequest,
    answer: Definition::HandoffModuleAnswer,
    input_fields: &["call", "config", "externalId"],
    deadline: Some(DEADLINE),
};

pub(crate) async fn handle(
    state: &State,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    call::handle(state, request, &ROUTE).await
}
