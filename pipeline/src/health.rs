//! The pipeline's operational listener (`WORKER_HEALTH_HOST`:`WORKER_HEALTH_PORT`): liveness,
//! readiness and metrics as every service answers them, and the worker health of SPEC §4.14:
//!
//! `GET /healthz` answers 200 `{status: "ok", workers: [{taskQueue, state}], temporal:
//! "connected"}` when every worker is `RUNNING` and the broker answers, else 503 with `status`
//! and `temporal` `unavailable` (SPEC §4.14) and the error envelope beside them; the workers'
//! states and the error's message say which of the two failed. SPEC's `temporal` names the
//! engine's connection; this pipeline's engine is the Kafka-compatible broker.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};
use service::health::{self, OperationalRoute, PROBE_TIMEOUT, Readiness};
use service::http::{
    Body, HttpError, Route, Routed, Router, Unrouted, request_id, response, serve,
};
use service::shutdown::CancellationToken;
use service::telemetry::MetricsHandle;
use tokio::net::TcpListener;

use crate::workers::{WorkerEntry, Workers};

/// Every route of the pipeline's listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HealthRoute {
    Operational(OperationalRoute),
    Workers,
}

impl Route for HealthRoute {
    fn all() -> Vec<Self> {
        vec![
            HealthRoute::Operational(OperationalRoute::Live),
            HealthRoute::Operational(OperationalRoute::Ready),
            HealthRoute::Operational(OperationalRoute::Metrics),
            HealthRoute::Workers,
        ]
    }

    fn method(self) -> Method {
        match self {
            HealthRoute::Operational(route) => route.method(),
            HealthRoute::Workers => Method::GET,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            HealthRoute::Operational(route) => route.pattern(),
            HealthRoute::Workers => "/healthz",
        }
    }
}

/// What the listener answers from.
pub(crate) struct Health {
    pub(crate) readiness: Readiness,
    pub(crate) metrics: MetricsHandle,
    pub(crate) workers: Workers,
    pub(crate) producer: topics::Producer,
}

/// A worker is not running, or the broker does not answer.
#[derive(Debug)]
struct Unhealthy {
    workers: Vec<WorkerEntry>,
    broker_answers: bool,
}

impl HttpError for Unhealthy {
    fn status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }

    fn code(&self) -> &'static str {
        "unavailable"
    }

    fn message(&self) -> Cow<'static, str> {
        if self.broker_answers {
            "A worker is not running.".into()
        } else {
            "The broker does not answer.".into()
        }
    }

    fn beside(&self) -> Option<Map<String, Value>> {
        json!({ "status": "unavailable", "workers": self.workers, "temporal": "unavailable" })
            .as_object()
            .cloned()
    }
}

/// `GET /healthz`.
async fn workers(health: &Health) -> Result<Response<Body>, Unhealthy> {
    let broker_answers = match health.producer.probe(PROBE_TIMEOUT).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "broker not answering the health probe");
            false
        }
    };
    let entries = health.workers.entries();
    if health.workers.all_running() && broker_answers {
        let body = json!({ "status": "ok", "workers": entries, "temporal": "connected" });
        Ok(response::json(StatusCode::OK, &body))
    } else {
        Err(Unhealthy {
            workers: entries,
            broker_answers,
        })
    }
}

async fn answer(
    health: &Health,
    router: &Router<HealthRoute>,
    request: Request<Incoming>,
) -> Response<Body> {
    let id = request_id::from_header(request.headers().get(request_id::HEADER));
    let mut answer = match router.route(request.method(), request.uri().path()) {
        Routed::Found(HealthRoute::Operational(route), _) => {
            health::answer(route, &health.readiness, &health.metrics)
                .await
                .unwrap_or_else(|not_ready| response::error(&not_ready, &id))
        }
        Routed::Found(HealthRoute::Workers, _) => workers(health)
            .await
            .unwrap_or_else(|unhealthy| response::error(&unhealthy, &id)),
        Routed::MethodNotAllowed { allow, .. } => {
            response::error(&Unrouted::MethodNotAllowed { allow }, &id)
        }
        Routed::NotFound => response::error(&Unrouted::NotFound, &id),
    };
    response::finish(&mut answer, &id);
    answer
}

/// Serves the listener on `listener` until `stop`.
pub(crate) async fn serve_health(listener: TcpListener, health: Health, stop: CancellationToken) {
    let health = Arc::new(health);
    let router = Arc::new(Router::<HealthRoute>::new());
    let handler = move |_peer: SocketAddr, request| {
        let health = health.clone();
        let router = router.clone();
        async move { answer(&health, &router, request).await }
    };
    serve(
        "health",
        listener,
        handler,
        stop.cancelled_owned(),
        Duration::from_secs(5),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use service::http::ErrorEnvelope;

    use super::*;
    use crate::workers::WorkerState;

    /// SPEC §4.14: on a 503 `temporal` is `unavailable` too, even while the broker answers (a
    /// worker is down); the message says which.
    #[test]
    fn an_unhealthy_answer_has_the_specs_members_and_the_error_envelope() {
        let unhealthy = Unhealthy {
            workers: vec![WorkerEntry {
                task_queue: "outbox",
                state: WorkerState::Retrying,
            }],
            broker_answers: true,
        };
        assert_eq!(
            ErrorEnvelope::of(&unhealthy, "req-1").to_value(),
            json!({
                "status": "unavailable",
                "workers": [{ "taskQueue": "outbox", "state": "RETRYING" }],
                "temporal": "unavailable",
                "error": {
                    "code": "unavailable",
                    "message": "A worker is not running.",
                    "requestId": "req-1"
                }
            })
        );
        assert_eq!(unhealthy.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
