//! A listener that serves only `GET /metrics` in text exposition: every process's
//! `METRICS_PORT` (SPEC "Telemetry environment"), and the worker's core metrics on the port
//! after it.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;

use super::{Route, Routed, Router, Unrouted, request_id, response};
use crate::shutdown::CancellationToken;

/// A label value as the text exposition quotes it.
pub fn label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The only route of the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MetricsRoute;

impl Route for MetricsRoute {
    fn all() -> Vec<Self> {
        vec![MetricsRoute]
    }
    fn method(self) -> Method {
        Method::GET
    }
    fn pattern(self) -> &'static str {
        "/metrics"
    }
}

/// Serves `GET /metrics` on `0.0.0.0:port`, answering what `render` writes, until `stop`.
/// `name` names the listener in log lines. A port that cannot be bound is logged, not fatal:
/// metrics are not worth stopping the service for.
pub async fn serve<R, F>(port: u16, name: &'static str, render: R, stop: CancellationToken)
where
    R: Fn() -> F + Send + Sync + 'static,
    F: Future<Output = String> + Send,
{
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(%addr, %error, listener = name, "metrics listener not started");
            return;
        }
    };
    let router = Arc::new(Router::<MetricsRoute>::new());
    let render = Arc::new(render);
    let handler = move |_peer, request: Request<Incoming>| {
        let (router, render) = (router.clone(), render.clone());
        async move {
            let id = request_id::from_header(request.headers().get(request_id::HEADER));
            let mut answer = match router.route(request.method(), request.uri().path()) {
                Routed::Found(MetricsRoute, _) => {
                    response::text(render().await, response::EXPOSITION)
                }
                Routed::MethodNotAllowed { allow, .. } => {
                    response::error(&Unrouted::MethodNotAllowed { allow }, &id)
                }
                Routed::NotFound => response::error(&Unrouted::NotFound, &id),
            };
            response::finish(&mut answer, &id);
            if answer.status() != StatusCode::OK {
                tracing::debug!(
                    status = answer.status().as_u16(),
                    listener = name,
                    "metrics listener refused"
                );
            }
            answer
        }
    };
    super::serve(
        name,
        listener,
        handler,
        stop.cancelled_owned(),
        Duration::from_secs(5),
    )
    .await;
}
