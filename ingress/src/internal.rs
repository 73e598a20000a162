//! The internal listener (`API_INTERNAL_PORT`): module and document fetch for the runner, and
//! health. A separate socket with its own route enum, so no public route reaches it and back.

use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use service::health::{self, OperationalRoute};
use service::http::observe;
use service::http::{Body, Route, Routed, Router, bearer, request_id, response};
use tracing::{Instrument, Span};

use crate::error::{AuthFailure, Error};
use crate::routes;
use crate::state::State;

/// Every route of the internal listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InternalRoute {
    Operational(OperationalRoute),
    /// `GET /internal/app-modules/:sha256`, with the runner's bearer.
    FetchModule,
    /// `GET /internal/app-calls/:callId/documents`, with the call's token.
    ListCallDocuments,
    /// `GET /internal/app-calls/:callId/documents/:id`, with the call's token.
    FetchCallDocument,
}

impl Route for InternalRoute {
    // Metrics are scraped from the public listener (or METRICS_PORT), not from this one.
    fn all() -> Vec<Self> {
        vec![
            InternalRoute::Operational(OperationalRoute::Live),
            InternalRoute::Operational(OperationalRoute::Ready),
            InternalRoute::FetchModule,
            InternalRoute::ListCallDocuments,
            InternalRoute::FetchCallDocument,
        ]
    }

    fn method(self) -> Method {
        match self {
            InternalRoute::Operational(route) => route.method(),
            InternalRoute::FetchModule
            | InternalRoute::ListCallDocuments
            | InternalRoute::FetchCallDocument => Method::GET,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            InternalRoute::Operational(route) => route.pattern(),
            InternalRoute::FetchModule => "/internal/app-modules/{sha256}",
            InternalRoute::ListCallDocuments => "/internal/app-calls/{callId}/documents",
            InternalRoute::FetchCallDocument => "/internal/app-calls/{callId}/documents/{id}",
        }
    }
}

/// Answers one request of the internal listener. Like the public one, each request but health
/// and metrics has its server span (continuing the runner's `traceparent`), an
/// `http.server.request.duration` sample and an access line (SPEC "Traces", "Metrics").
pub(crate) async fn handle(
    state: State,
    router: Arc<Router<InternalRoute>>,
    request: Request<Incoming>,
) -> Response<Body> {
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let method = request.method().clone();
    let label = match router.route(&method, request.uri().path()) {
        Routed::Found(InternalRoute::Operational(_), _) => None,
        Routed::Found(route, _) => Some(route.pattern()),
        Routed::MethodNotAllowed { .. } | Routed::NotFound => Some("unmatched"),
    };
    let span = label
        .map(|label| observe::request_span(&method, label, &request_id, request.headers(), None));
    let started = Instant::now();
    let routed = route(&state, &router, &request);
    let result = match &span {
        Some(span) => routed.instrument(span.clone()).await,
        None => routed.await,
    };
    let mut answer = result.unwrap_or_else(|error| {
        if error.is_server_fault() {
            let parent = span.as_ref().and_then(Span::id);
            tracing::error!(parent: parent, %error, requestId = %request_id, "internal request failed");
        }
        response::error(&error, &request_id)
    });
    response::finish(&mut answer, &request_id);
    if let (Some(span), Some(label)) = (&span, label) {
        observe::finish(span, &method, label, answer.status(), started.elapsed());
    }
    answer
}

async fn route(
    state: &State,
    router: &Router<InternalRoute>,
    request: &Request<Incoming>,
) -> Result<Response<Body>, Error> {
    match router.route(request.method(), request.uri().path()) {
        Routed::Found(InternalRoute::Operational(route), _) => {
            health::answer(route, &state.listener.readiness, &state.listener.metrics)
                .await
                .map_err(Error::NotReady)
        }
        Routed::Found(InternalRoute::FetchModule, params) => {
            // Without APP_RUNNER_TOKEN nobody passes.
            if !bearer::is_shared_token(request.headers(), state.config.runner_token.as_deref()) {
                return Err(Error::Unauthorized(AuthFailure::Invalid));
            }
            routes::app_modules::fetch(state, params.get("sha256").unwrap_or_default()).await
        }
        Routed::Found(InternalRoute::ListCallDocuments, params) => {
            let call = params.get("callId").unwrap_or_default();
            routes::app_call_documents::list(state, request.headers(), call).await
        }
        Routed::Found(InternalRoute::FetchCallDocument, params) => {
            let call = params.get("callId").unwrap_or_default();
            let id = params.get("id").unwrap_or_default();
            routes::app_call_documents::read(state, request.headers(), (call, id)).await
        }
        Routed::MethodNotAllowed { allow, .. } => Err(Error::MethodNotAllowed { allow }),
        Routed::NotFound => Err(Error::NotFound),
    }
}
