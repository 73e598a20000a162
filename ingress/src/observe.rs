//! What every counted request leaves behind: one server span (`http.request`), one
//! `http.server.request.duration` sample and one log line. Health and metrics leave nothing.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};
use tracing::{Span, field};

use crate::auth::Principal;

/// The server span of a request, continuing the caller's trace when it sent `traceparent`.
pub fn request_span(
    method: &Method,
    route: &'static str,
    request_id: &str,
    headers: &HeaderMap,
) -> Span {
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = field::Empty,
        http.request.method = %method,
        http.route = route,
        http.response.status_code = field::Empty,
        svc.request_id = %request_id,
        svc.tenant_id = field::Empty,
        svc.principal.kind = field::Empty,
        svc.principal.id = field::Empty,
    );
    if let Some(traceparent) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        telemetry::traces::continue_from(&span, traceparent);
    }
    span
}

/// Adds the authenticated principal to the request span (and so to every log line after it).
pub fn record_principal(span: &Span, principal: &Principal) {
    span.record("svc.tenant_id", field::display(principal.tenant));
    span.record("svc.principal.kind", principal.kind.as_str());
    span.record("svc.principal.id", field::display(principal.telemetry_id()));
}

/// Records the outcome: status on the span, the duration histogram, and the access log line.
pub fn finish_request(
    span: &Span,
    method: &Method,
    route: &'static str,
    status: StatusCode,
    elapsed: Duration,
) {
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    metrics::histogram!(
        "http.server.request.duration",
        "http.request.method" => method_label(method),
        "http.route" => route,
        "http.response.status_code" => status_label(status),
    )
    .record(elapsed.as_secs_f64());
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    let _entered = span.enter();
    if status.is_server_error() {
        tracing::error!(status = status.as_u16(), duration_ms, %method, route, "request failed");
    } else {
        tracing::info!(status = status.as_u16(), duration_ms, %method, route, "request");
    }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "_OTHER",
    }
}

/// Status codes as static labels, so recording a sample allocates nothing.
fn status_label(status: StatusCode) -> &'static str {
    match status.as_u16() {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        413 => "413",
        415 => "415",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        s if s < 300 => "2xx",
        s if s < 400 => "3xx",
        s if s < 500 => "4xx",
        _ => "5xx",
    }
}
