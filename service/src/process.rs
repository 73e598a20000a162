//! The `main` every service shares: read the whole environment (telemetry settings and the
//! service's own configuration) and refuse to start with every problem listed; then a
//! multi-threaded runtime, telemetry, the shutdown signal, the `METRICS_PORT` listener when
//! asked for, the service's own `run`, a final log line, flushed telemetry, and an exit status
//! that says how it ended.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;

use crate::config::Env;
use crate::health;
use crate::http::{Route, Routed, Router, Unrouted, request_id, response, serve};
use crate::shutdown::{self, CancellationToken};
use crate::telemetry::{self, MetricsHandle, Settings};

/// What a service's `run` answers.
pub type RunResult = Result<(), Box<dyn std::error::Error>>;

/// What the process gives a service's `run`.
#[derive(Debug, Clone)]
pub struct Process {
    /// Renders `/metrics`.
    pub metrics: MetricsHandle,
    /// Whether spans are exported.
    pub traces_exported: bool,
    /// Cancelled on SIGTERM or Ctrl-C.
    pub stop: CancellationToken,
}

/// Runs `service`: `read` takes its configuration from the environment, `run` serves until
/// the stop signal.
pub fn main<C, R, F, Fut>(service: &'static str, version: &'static str, read: R, run: F) -> ExitCode
where
    R: FnOnce(&mut Env) -> C,
    F: FnOnce(C, Process) -> Fut,
    Fut: Future<Output = RunResult>,
{
    let mut env = Env::from_process();
    let settings = Settings::read(&mut env);
    let config = read(&mut env);
    let (settings, config) = match env.finish((settings, config)) {
        Ok(read) => read,
        Err(problems) => {
            eprintln!("{service}: {problems}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{service}: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let metrics_port = settings.metrics_port;
        let telemetry = match telemetry::init(settings, service, version) {
            Ok(telemetry) => telemetry,
            Err(error) => {
                eprintln!("{service}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let process = Process {
            metrics: telemetry.metrics_handle(),
            traces_exported: telemetry.traces_exported(),
            stop: shutdown::on_signal(),
        };
        if let Some(port) = metrics_port {
            tokio::spawn(serve_metrics(port, process.clone()));
        }
        let code = match run(config, process).await {
            Ok(()) => {
                tracing::info!("{service} stopped");
                ExitCode::SUCCESS
            }
            Err(error) => {
                tracing::error!(%error, "{service} stopped");
                eprintln!("{service}: {error}");
                ExitCode::FAILURE
            }
        };
        telemetry.shutdown();
        code
    })
}

/// The only route of the `METRICS_PORT` listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MetricsRoute;

impl Route for MetricsRoute {
    const ALL: &'static [Self] = &[MetricsRoute];
    fn method(self) -> Method {
        Method::GET
    }
    fn pattern(self) -> &'static str {
        "/metrics"
    }
}

/// `GET /metrics` on `0.0.0.0:port` (SPEC "Telemetry environment"), until the stop signal.
async fn serve_metrics(port: u16, process: Process) {
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(%addr, %error, "METRICS_PORT listener not started");
            return;
        }
    };
    let router = std::sync::Arc::new(Router::<MetricsRoute>::new());
    let metrics = process.metrics.clone();
    let handler = move |_peer, request: Request<Incoming>| {
        let router = router.clone();
        let metrics = metrics.clone();
        async move {
            let id = request_id::from_header(request.headers().get(request_id::HEADER));
            let mut answer = match router.route(request.method(), request.uri().path()) {
                Routed::Found(MetricsRoute, _) => health::metrics(&metrics).await,
                Routed::MethodNotAllowed { allow, .. } => {
                    response::error(&Unrouted::MethodNotAllowed { allow }, &id)
                }
                Routed::NotFound => response::error(&Unrouted::NotFound, &id),
            };
            response::finish(&mut answer, &id);
            if answer.status() != StatusCode::OK {
                tracing::debug!(
                    status = answer.status().as_u16(),
                    "metrics listener refused"
                );
            }
            answer
        }
    };
    serve(
        "metrics",
        listener,
        handler,
        process.stop.cancelled_owned(),
        Duration::from_secs(5),
    )
    .await;
}
