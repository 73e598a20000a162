//! The internal listener (`API_INTERNAL_PORT`): module fetch for the runner, and health. It is a
//! separate socket with its own routing table, so no public route reaches it and back.

use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use subtle::ConstantTimeEq;

use crate::auth::verifier::bearer_token;
use crate::error::{AuthFailure, Error};
use crate::health;
use crate::response::{self, Body};
use crate::router::{Access, Lookup, RouteId, Router};
use crate::routes;
use crate::state::State;
use telemetry::request_id;

pub async fn handle(
    state: State,
    router: Arc<Router>,
    request: Request<Incoming>,
) -> Response<Body> {
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let mut answer = route(&state, &router, &request)
        .await
        .unwrap_or_else(|error| {
            if error.is_server_fault() {
                tracing::error!(%error, requestId = %request_id, "internal request failed");
            }
            response::error(&error, &request_id)
        });
    response::finish(&mut answer, &request_id);
    answer
}

async fn route(
    state: &State,
    router: &Router,
    request: &Request<Incoming>,
) -> Result<Response<Body>, Error> {
    let (spec, params) = match router.lookup(request.method(), request.uri().path()) {
        Lookup::Found(spec, params) => (spec, params),
        Lookup::MethodNotAllowed { allow, .. } => return Err(Error::MethodNotAllowed { allow }),
        Lookup::NotFound => return Err(Error::NotFound),
    };
    if spec.access == Access::RunnerToken {
        check_runner_token(state, request)?;
    }
    match spec.id {
        RouteId::Health => Ok(health::live()),
        RouteId::Ready => health::ready(state).await,
        RouteId::FetchModule => {
            routes::app_modules::fetch(state, params.get("sha256").unwrap_or_default()).await
        }
        RouteId::Metrics | RouteId::ListInvocations | RouteId::GetInvocation => {
            Err(Error::NotFound)
        }
    }
}

/// The runner's bearer, compared in constant time. Without `APP_RUNNER_TOKEN` nobody passes.
fn check_runner_token(state: &State, request: &Request<Incoming>) -> Result<(), Error> {
    let presented = bearer_token(request.headers().get(http::header::AUTHORIZATION))
        .map_err(Error::Unauthorized)?;
    let expected = state
        .config
        .runner_token
        .as_deref()
        .ok_or(Error::Unauthorized(AuthFailure::Invalid))?;
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(Error::Unauthorized(AuthFailure::Invalid))
    }
}
