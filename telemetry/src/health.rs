//! The operational listener of the pipeline and the runner: `GET /health` (liveness),
//! `GET /health/ready` (every dependency answers; otherwise 503 naming each one that does not),
//! `GET /healthz` (alias of readiness for orchestrators) and `GET /metrics`. Answers have the same
//! shapes as the API's, errors the same envelope.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;

use crate::MetricsHandle;

/// One dependency's answer.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    pub result: Result<(), String>,
}

/// Runs every readiness probe of a process.
pub type Probes = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Vec<Check>> + Send>> + Send + Sync>;

/// How long one probe may take before it counts as unreachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `probe` with the probe timeout.
pub async fn check(name: &'static str, probe: impl Future<Output = Result<(), String>>) -> Check {
    let result = tokio::time::timeout(PROBE_TIMEOUT, probe)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {PROBE_TIMEOUT:?}")));
    if let Err(reason) = &result {
        tracing::warn!(dependency = name, %reason, "dependency not ready");
    }
    Check { name, result }
}

/// `(ready, checks, unreachable)` of a set of answers: each check `ok` or `unreachable`.
pub fn summarize(checks: &[Check]) -> (bool, Value, Vec<&'static str>) {
    let mut shown = Map::new();
    let mut unreachable = Vec::new();
    for c in checks {
        let state = if c.result.is_ok() {
            "ok"
        } else {
            "unreachable"
        };
        shown.insert(c.name.into(), Value::from(state));
        if c.result.is_err() {
            unreachable.push(c.name);
        }
    }
    (unreachable.is_empty(), Value::Object(shown), unreachable)
}

fn json_response(status: StatusCode, body: &Value, request_id: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", value);
    }
    response
}

fn envelope(code: &str, message: String, details: Option<Value>, request_id: &str) -> Value {
    let mut error = json!({ "code": code, "message": message, "requestId": request_id });
    if let Some(details) = details {
        error["details"] = details;
    }
    json!({ "error": error })
}

/// Answers `/health`, `/health/ready`, `/healthz` and `/metrics`; anything else is 404. For
/// services that serve these routes beside their own on one listener.
pub async fn respond(
    request: Request<Incoming>,
    probes: Probes,
    metrics: MetricsHandle,
) -> Response<Full<Bytes>> {
    let request_id =
        crate::request_id::from_header(request.headers().get(crate::request_id::HEADER));
    let path = request.uri().path();
    let known = matches!(path, "/health" | "/health/ready" | "/healthz" | "/metrics");
    if !known {
        let body = envelope("not_found", "Not found.".into(), None, &request_id);
        return json_response(StatusCode::NOT_FOUND, &body, &request_id);
    }
    // HEAD is GET without the body (hyper leaves the body out of a HEAD answer).
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let body = envelope(
            "method_not_allowed",
            "Method not allowed; allowed: GET, HEAD.".into(),
            None,
            &request_id,
        );
        let mut response = json_response(StatusCode::METHOD_NOT_ALLOWED, &body, &request_id);
        response
            .headers_mut()
            .insert(http::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match path {
        "/health" => json_response(StatusCode::OK, &json!({ "status": "ok" }), &request_id),
        "/metrics" => {
            let mut response = Response::new(Full::new(Bytes::from(metrics.render())));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            response
                .headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            if let Ok(value) = HeaderValue::from_str(&request_id) {
                response
                    .headers_mut()
                    .insert(crate::request_id::HEADER, value);
            }
            response
        }
        _ => {
            let checks = probes().await;
            let (ready, shown, unreachable) = summarize(&checks);
            if ready {
                json_response(
                    StatusCode::OK,
                    &json!({ "status": "ready", "checks": shown }),
                    &request_id,
                )
            } else {
                let message = format!("Not ready; unreachable: {}.", unreachable.join(", "));
                let details = json!({ "unreachable": unreachable, "checks": shown });
                let body = envelope("not_ready", message, Some(details), &request_id);
                json_response(StatusCode::SERVICE_UNAVAILABLE, &body, &request_id)
            }
        }
    }
}

/// Serves the operational routes on `addr` until `shutdown` resolves (a service whose only
/// listener is this one, such as the pipeline).
pub async fn serve(
    addr: SocketAddr,
    probes: Probes,
    metrics: MetricsHandle,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "health listening");
    let handler = move |_peer, request| respond(request, probes.clone(), metrics.clone());
    crate::http_server::serve(
        "health",
        listener,
        handler,
        shutdown,
        Duration::from_secs(5),
    )
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_every_unreachable_dependency() {
        let checks = vec![
            Check {
                name: "postgres",
                result: Ok(()),
            },
            Check {
                name: "redis",
                result: Err("refused".into()),
            },
            Check {
                name: "broker",
                result: Err("timeout".into()),
            },
        ];
        let (ready, shown, unreachable) = summarize(&checks);
        assert!(!ready);
        assert_eq!(unreachable, vec!["redis", "broker"]);
        assert_eq!(shown["postgres"], "ok");
        assert_eq!(shown["redis"], "unreachable");
    }
}
