//! `POST /v1/invoke`: runs an action (`invoke` export) with the install's context, within the
//! action's `timeoutMs`.

use http::{Request, Response};
use hyper::body::Incoming;
use service::http::Body;

use super::call::{self, Route};
use crate::Error;
use crate::call::Export;
use crate::contract::Definition;
use crate::state::State;

const ROUTE: Route = Route {
    export: Export::Invoke,
    request: Definition::InvokeRequest,
    answer: Definition::InvokeModuleAnswer,
    input_fields: &["call", "action", "idempotencyKey", "config", "input"],
    deadline: None,
};

pub(crate) async fn handle(
    state: &State,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    call::handle(state, request, &ROUTE).await
}
