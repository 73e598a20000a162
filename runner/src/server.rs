//! The runner's listener: `/v1/*` behind the runner bearer, the operational routes beside
//! them. Every answer carries `x-request-id`; every `/v1` request has a span that continues the
//! caller's trace.

use std::time::Instant;

use http::{HeaderValue, Method, Request, Response};
use hyper::body::Incoming;
use subtle::ConstantTimeEq;
use telemetry::health::Probes;
use telemetry::request_id;
use tracing::Instrument;

use crate::Error;
use crate::response::{Body, error_response};
use crate::routes;
use crate::state::State;

/// Answers one request.
pub async fn handle(
    state: State,
    probes: Probes,
    metrics: telemetry::MetricsHandle,
    request: Request<Incoming>,
) -> Response<Body> {
    if !request.uri().path().starts_with("/v1/") {
        return telemetry::health::respond(request, probes, metrics).await;
    }
    let request_id = request_id::from_header(request.headers().get(request_id::HEADER));
    let route = route_name(request.uri().path());
    let span = tracing::info_span!(
        "runner.request",
        otel.kind = "server",
        svc.request_id = %request_id,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
    );
    if let Some(parent) = request
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        telemetry::traces::continue_from(&span, parent);
    }
    let started = Instant::now();
    let result = dispatch(&state, request).instrument(span.clone()).await;
    let mut response = match result {
        Ok(response) => response,
        Err(error) => {
            if matches!(error.cause(), Error::Internal(_)) {
                tracing::error!(parent: &span, %error, "request failed");
            }
            error_response(&error, &request_id)
        }
    };
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    metrics::histogram!("http.server.request.duration", "http.route" => route, "http.response.status_code" => status.to_string())
        .record(started.elapsed().as_secs_f64());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(request_id::HEADER, value);
    }
    response
}

fn route_name(path: &str) -> &'static str {
    match path {
        "/v1/inspect" => "/v1/inspect",
        "/v1/invoke" => "/v1/invoke",
        "/v1/webhooks/handle" => "/v1/webhooks/handle",
        "/v1/handoff" => "/v1/handoff",
        _ => "unknown",
    }
}

async fn dispatch(state: &State, request: Request<Incoming>) -> Result<Response<Body>, Error> {
    // The bearer first: without it, nothing under /v1 says which routes exist.
    authorise(state, &request)?;
    let route = route_name(request.uri().path());
    if route == "unknown" {
        return Err(Error::NotFound);
    }
    if request.method() != Method::POST {
        return Err(Error::MethodNotAllowed { allow: "POST" });
    }
    match route {
        "/v1/inspect" => routes::inspect::handle(state, request).await,
        "/v1/invoke" => routes::invoke::handle(state, request).await,
        "/v1/webhooks/handle" => routes::webhooks_handle::handle(state, request).await,
        _ => routes::handoff::handle(state, request).await,
    }
}

/// The runner bearer, compared in constant time; without `APP_RUNNER_TOKEN` nobody passes.
fn authorise(state: &State, request: &Request<Incoming>) -> Result<(), Error> {
    let expected = state
        .config
        .runner_token
        .as_deref()
        .ok_or(Error::Unauthorized)?;
    let presented = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .ok_or(Error::Unauthorized)?;
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(Error::Unauthorized)
    }
}
