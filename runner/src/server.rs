//! The runner's listener: its routes, and the path every request takes. Health and metrics are
//! answered first (not counted, not traced, not logged); every `/v1` request has a server span
//! continuing the caller's trace, asks for the runner bearer before saying whether its route
//! exists, then goes to its route file.

use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use service::health::{self, OperationalRoute};
use service::http::{Body, Route, Routed, Router, bearer, observe, request_id, response};
use tracing::Instrument;

use crate::Error;
use crate::routes;
use crate::state::State;

/// Every route of the runner's listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunnerRoute {
    Operational(OperationalRoute),
    Api(ApiRoute),
}

/// The `/v1` routes (SPEC §4.13), all behind the runner bearer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiRoute {
    Inspect,
    Invoke,
    WebhooksHandle,
    Handoff,
}

impl Route for RunnerRoute {
    fn all() -> Vec<Self> {
        vec![
            RunnerRoute::Operational(OperationalRoute::Live),
            RunnerRoute::Operational(OperationalRoute::Ready),
            RunnerRoute::Operational(OperationalRoute::Metrics),
            RunnerRoute::Api(ApiRoute::Inspect),
            RunnerRoute::Api(ApiRoute::Invoke),
            RunnerRoute::Api(ApiRoute::WebhooksHandle),
            RunnerRoute::Api(ApiRoute::Handoff),
        ]
    }

    fn method(self) -> Method {
        match self {
            RunnerRoute::Operational(route) => route.method(),
            RunnerRoute::Api(_) => Method::POST,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            RunnerRoute::Operational(route) => route.pattern(),
            RunnerRoute::Api(ApiRoute::Inspect) => "/v1/inspect",
            RunnerRoute::Api(ApiRoute::Invoke) => "/v1/invoke",
            RunnerRoute::Api(ApiRoute::WebhooksHandle) => "/v1/webhooks/handle",
            RunnerRoute::Api(ApiRoute::Handoff) => "/v1/handoff",
        }
    }
}

/// Answers one request. Never fails: every failure is an envelope.
pub(crate) async fn handle(
    state: State,
    router: Arc<Router<RunnerRoute>>,
    request: Request<Incoming>,
) -> Response<Body> {
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let routed = router.route(request.method(), request.uri().path());
    let label = routed.label();
    let route = match routed {
        Routed::Found(RunnerRoute::Operational(route), _) => {
            let answer = health::answer(route, &state.readiness, &state.metrics).await;
            let mut answer = answer.unwrap_or_else(|e| response::error(&e, &request_id));
            response::finish(&mut answer, &request_id);
            return answer;
        }
        Routed::Found(RunnerRoute::Api(route), _) => Ok(route),
        Routed::MethodNotAllowed { allow, .. } => Err(Error::MethodNotAllowed { allow }),
        Routed::NotFound => Err(Error::NotFound),
    };
    let method = request.method().clone();
    let span = observe::request_span(&method, label, &request_id, request.headers(), None);
    let started = Instant::now();
    let result = dispatch(&state, route, request)
        .instrument(span.clone())
        .await;
    let mut answer = result.unwrap_or_else(|error| {
        if matches!(error.cause(), Error::Internal(_)) {
            tracing::error!(parent: &span, %error, "request failed");
        }
        response::error(&error, &request_id)
    });
    response::finish(&mut answer, &request_id);
    observe::finish(&span, &method, label, answer.status(), started.elapsed());
    answer
}

async fn dispatch(
    state: &State,
    route: Result<ApiRoute, Error>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Error> {
    // The bearer first: without it, nothing under /v1 says which routes exist.
    let under_v1 = request.uri().path().starts_with("/v1/");
    if (route.is_ok() || under_v1)
        && !bearer::is_shared_token(request.headers(), state.config.runner_token.as_deref())
    {
        return Err(Error::Unauthorized);
    }
    match route? {
        ApiRoute::Inspect => routes::inspect::handle(state, request).await,
        ApiRoute::Invoke => routes::invoke::handle(state, request).await,
        ApiRoute::WebhooksHandle => routes::webhooks_handle::handle(state, request).await,
        ApiRoute::Handoff => routes::handoff::handle(state, request).await,
    }
}
