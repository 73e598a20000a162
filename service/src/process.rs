//! The `main` every service shares: read the whole environment (telemetry settings and the
//! service's own configuration) and refuse to start with every problem listed; then a
//! multi-threaded runtime, telemetry, the shutdown signal, the `METRICS_PORT` listener when
//! asked for, the service's own `run`, a final log line, flushed telemetry, and an exit status
//! that says how it ended.

use std::future::Future;
use std::process::ExitCode;

use crate::config::Env;
use crate::health;
use crate::http::exposition;
use crate::shutdown::{self, CancellationToken};
use crate::telemetry::{self, MetricsHandle, Settings};

/// What a service's `run` answers.
pub type RunResult = Result<(), Box<dyn std::error::Error>>;

/// What the process gives a service's `run`.
#[derive(Debug, Clone)]
pub struct Process {
    /// Renders `/metrics`.
    pub metrics: MetricsHandle,
    /// `METRICS_PORT`, when set.
    pub metrics_port: Option<u16>,
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
            metrics_port,
            traces_exported: telemetry.traces_exported(),
            stop: shutdown::on_signal(),
        };
        if let Some(port) = metrics_port {
            let metrics = process.metrics.clone();
            let render = move || {
                let metrics = metrics.clone();
                async move { health::exposition(&metrics).await }
            };
            tokio::spawn(exposition::serve(
                port,
                "metrics",
                render,
                process.stop.clone(),
            ));
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
