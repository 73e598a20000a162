//! What every request a listener serves leaves behind, the same on every listener: one server
//! span (`http.request`, continuing the caller's trace), one `http.server.request.duration`
//! sample with the HTTP semantic-convention labels, and one access line. Health and metrics
//! routes leave nothing.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};
use tracing::{Span, field};
use uuid::Uuid;

use crate::telemetry::traces;

/// The authenticated caller of a request, as its span names it (SPEC "Traces": tenant and
/// principal).
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub tenant: Uuid,
    /// `human`, `machine` or `applicant`.
    pub kind: &'static str,
    /// `svc.principal.id`: never an applicant's submission id itself.
    pub id: &'a str,
}

/// The server span of a request. `route` is the matched pattern (never the raw path, which
/// holds ids). The caller is known before the span starts (its token is checked first), so its
/// fields are set at once rather than recorded later; the app fields are recorded by routes
/// that call an app.
pub fn request_span(
    method: &Method,
    route: &'static str,
    request_id: &str,
    headers: &HeaderMap,
    caller: Option<Caller<'_>>,
) -> Span {
    let span = tracing::info_span!(
        "http.request",
        otel.name = %format_args!("{} {route}", method_label(method)),
        otel.kind = "server",
        otel.status_code = field::Empty,
        http.request.method = method_label(method),
        http.route = route,
        http.response.status_code = field::Empty,
        svc.request_id = request_id,
        svc.tenant_id = caller.map(|c| field::display(c.tenant)),
        svc.principal.kind = caller.map(|c| c.kind),
        svc.principal.id = caller.map(|c| c.id),
        svc.app.name = field::Empty,
        svc.app.call_id = field::Empty,
        svc.remote_parent = field::Empty,
    );
    if let Some(traceparent) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        traces::continue_from(&span, traceparent);
    }
    span
}

/// Records the outcome: the status on the span, the duration sample and the access line.
pub fn finish(
    span: &Span,
    method: &Method,
    route: &'static str,
    status: StatusCode,
    elapsed: Duration,
) {
    // Span-only attributes (the access line says `status`): recorded only for spans that leave
    // the process, since a record costs as much as a log line.
    if traces::exported() {
        span.record("http.response.status_code", status.as_u16());
        if status.is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
    }
    metrics::histogram!(
        "http.server.request.duration",
        "http.request.method" => method_label(method),
        "http.route" => route,
        "http.response.status_code" => status_label(status),
    )
    .record(elapsed.as_secs_f64());
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    let status = status.as_u16();
    let _entered = span.enter();
    if status >= 500 {
        tracing::error!(status, duration_ms, "request failed");
    } else {
        tracing::info!(status, duration_ms, "request");
    }
}

/// Methods as static labels: an unknown method is `_OTHER` (semantic conventions), so a
/// client cannot mint label values.
pub fn method_label(method: &Method) -> &'static str {
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
        422 => "422",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded() {
        assert_eq!(
            method_label(&Method::from_bytes(b"BREW").expect("a method")),
            "_OTHER"
        );
        assert_eq!(status_label(StatusCode::IM_A_TEAPOT), "4xx");
        assert_eq!(status_label(StatusCode::UNPROCESSABLE_ENTITY), "422");
    }
}
