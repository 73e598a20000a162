//! The `main` every service shares: a multi-threaded runtime, telemetry, the service's own
//! `run`, a final log line and flushed telemetry, and an exit status that says how it ended.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;

use crate::Telemetry;

/// What a service's `run` answers.
pub type RunResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `run` for `service` and answers the process's exit status.
pub fn main<F>(service: &'static str, version: &'static str, run: F) -> ExitCode
where
    F: for<'t> FnOnce(&'t Telemetry) -> Pin<Box<dyn Future<Output = RunResult> + 't>>,
{
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
        let telemetry = match crate::init(service, version) {
            Ok(telemetry) => telemetry,
            Err(error) => {
                eprintln!("{service}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let code = match run(&telemetry).await {
            Ok(()) => ExitCode::SUCCESS,
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
