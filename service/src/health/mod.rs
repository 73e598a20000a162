//! Liveness, readiness and the metrics exposition, answered the same way by every service:
//! `GET /health` (the process is up), `GET /health/ready` (every dependency answers; otherwise
//! 503 `not_ready` naming each one that does not) and `GET /metrics` (Prometheus text). None of
//! them is counted, traced or logged.
//!
//! A service's readiness is a [`Readiness`]: named [`probes`], each bounded by
//! [`PROBE_TIMEOUT`]. A dependency the deployment does not have is `not configured`: it is
//! reported, and does not make the service unready.

pub mod probes;

use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use http::{Response, StatusCode};
use serde_json::{Map, Value, json};

use http::Method;

use crate::http::{Body, HttpError, response};
use crate::telemetry::MetricsHandle;

/// How long one probe may take before its dependency counts as unreachable.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

type Probe = Box<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The state of one dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyState {
    Ok,
    Unreachable(String),
    /// The deployment has none; the features that need it answer unavailable.
    NotConfigured,
}

impl DependencyState {
    fn label(&self) -> &'static str {
        match self {
            DependencyState::Ok => "ok",
            DependencyState::Unreachable(_) => "unreachable",
            DependencyState::NotConfigured => "not configured",
        }
    }
}

/// The dependencies a service needs to serve, each with its probe.
#[derive(Default)]
pub struct Readiness {
    dependencies: Vec<(&'static str, Option<Probe>)>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.dependencies.iter().map(|(n, _)| *n).collect();
        f.debug_struct("Readiness")
            .field("dependencies", &names)
            .finish()
    }
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds dependency `name`, reachable when `probe` answers `Ok` within [`PROBE_TIMEOUT`].
    pub fn probe<F, Fut>(mut self, name: &'static str, probe: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let boxed: Probe = Box::new(move || Box::pin(probe()));
        self.dependencies.push((name, Some(boxed)));
        self
    }

    /// Adds dependency `name`, which this deployment does not have.
    pub fn not_configured(mut self, name: &'static str) -> Self {
        self.dependencies.push((name, None));
        self
    }

    /// Runs every probe at once.
    pub async fn check(&self) -> Report {
        let states = join_all(self.dependencies.iter().map(|(name, probe)| async move {
            let state = match probe {
                None => DependencyState::NotConfigured,
                Some(probe) => match tokio::time::timeout(PROBE_TIMEOUT, probe()).await {
                    Ok(Ok(())) => DependencyState::Ok,
                    Ok(Err(reason)) => DependencyState::Unreachable(reason),
                    Err(_) => {
                        DependencyState::Unreachable(format!("no answer within {PROBE_TIMEOUT:?}"))
                    }
                },
            };
            if let DependencyState::Unreachable(reason) = &state {
                tracing::warn!(dependency = *name, %reason, "dependency not ready");
            }
            (*name, state)
        }))
        .await;
        Report { states }
    }
}

/// The state of every dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub states: Vec<(&'static str, DependencyState)>,
}

impl Report {
    pub fn is_ready(&self) -> bool {
        self.unreachable().is_empty()
    }

    /// The dependencies that did not answer.
    pub fn unreachable(&self) -> Vec<&'static str> {
        self.states
            .iter()
            .filter(|(_, s)| matches!(s, DependencyState::Unreachable(_)))
            .map(|(name, _)| *name)
            .collect()
    }

    /// `{name: "ok" | "unreachable" | "not configured"}`.
    pub fn checks(&self) -> Value {
        let shown: Map<String, Value> = self
            .states
            .iter()
            .map(|(name, state)| ((*name).to_owned(), Value::from(state.label())))
            .collect();
        Value::Object(shown)
    }
}

/// A service that is up but cannot serve: 503 `not_ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady(pub Report);

impl HttpError for NotReady {
    fn status(&self) -> StatusCode {
        StatusCode::SERVICE_UNAVAILABLE
    }

    fn code(&self) -> &'static str {
        "not_ready"
    }

    fn message(&self) -> Cow<'static, str> {
        format!(
            "Not ready; unreachable: {}.",
            self.0.unreachable().join(", ")
        )
        .into()
    }

    fn details(&self) -> Option<Value> {
        Some(json!({ "unreachable": self.0.unreachable(), "checks": self.0.checks() }))
    }
}

/// The operational routes, part of every listener's route enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationalRoute {
    Live,
    Ready,
    Metrics,
}

impl OperationalRoute {
    pub const ALL: [OperationalRoute; 3] = [
        OperationalRoute::Live,
        OperationalRoute::Ready,
        OperationalRoute::Metrics,
    ];

    pub fn method(self) -> Method {
        Method::GET
    }

    pub fn pattern(self) -> &'static str {
        match self {
            OperationalRoute::Live => "/health",
            OperationalRoute::Ready => "/health/ready",
            OperationalRoute::Metrics => "/metrics",
        }
    }
}

/// The answer of an operational route.
pub async fn answer(
    route: OperationalRoute,
    readiness: &Readiness,
    metrics: &MetricsHandle,
) -> Result<Response<Body>, NotReady> {
    match route {
        OperationalRoute::Live => Ok(live()),
        OperationalRoute::Ready => ready(readiness).await,
        OperationalRoute::Metrics => Ok(self::metrics(metrics).await),
    }
}

/// `GET /health`.
pub fn live() -> Response<Body> {
    response::json(StatusCode::OK, &json!({ "status": "ok" }))
}

/// `GET /health/ready`: 200 `{status: ready, checks}`, or the [`NotReady`] failure.
pub async fn ready(readiness: &Readiness) -> Result<Response<Body>, NotReady> {
    let report = readiness.check().await;
    if report.is_ready() {
        Ok(response::json(
            StatusCode::OK,
            &json!({ "status": "ready", "checks": report.checks() }),
        ))
    } else {
        Err(NotReady(report))
    }
}

/// `GET /metrics`: the text exposition of every instrument, the observable gauges with them.
pub async fn metrics(handle: &MetricsHandle) -> Response<Body> {
    response::text(exposition(handle).await, response::EXPOSITION)
}

/// The process's instruments and observable gauges in text exposition.
pub(crate) async fn exposition(handle: &MetricsHandle) -> String {
    let mut text = handle.render();
    text.push_str(&crate::telemetry::observed::render().await);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_unreachable_dependency_is_named_and_an_absent_one_does_not_count() {
        let readiness = Readiness::new()
            .probe("postgres", || async { Ok(()) })
            .probe("redis", || async { Err("refused".to_owned()) })
            .probe("broker", std::future::pending)
            .not_configured("objectStore");
        // The broker never answers: the check waits out its timeout (real time: tokio's paused
        // clock would change tokio's features for every test build, and so rebuild every crate
        // that depends on tokio beside the services' build).
        let report = readiness.check().await;
        assert!(!report.is_ready());
        assert_eq!(report.unreachable(), vec!["redis", "broker"]);
        assert_eq!(
            report.checks(),
            json!({
                "postgres": "ok", "redis": "unreachable", "broker": "unreachable",
                "objectStore": "not configured"
            })
        );
        let without = Readiness::new()
            .probe("postgres", || async { Ok(()) })
            .not_configured("objectStore");
        assert!(without.check().await.is_ready());
    }
}
