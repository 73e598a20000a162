//! Serving: the process's own binary as `runner compile-module` is the compiler child (see
//! `compiler`); otherwise the runner's one listener (`RUNNER_PORT`: `/v1/*`, health, metrics)
//! until the stop signal.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use service::health::Readiness;
use service::http::{Router, serve};
use service::{Process, RunResult};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::server::{self, RunnerRoute};
use crate::state::State;
use crate::{compiler, dependencies};

/// Runs the runner, or the compiler child when asked to be one.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if let Some((first, rest)) = args.split_first()
        && first == compiler::child::ARG
    {
        return compiler::child::main(rest);
    }
    service::main("runner", env!("CARGO_PKG_VERSION"), Config::read, run)
}

async fn run(config: Config, process: Process) -> RunResult {
    // Its compiler children run as the same user: keep them (and anyone else of this user) out
    // of this process's memory and environment, which hold the runner token and call secrets.
    #[cfg(target_os = "linux")]
    if let Err(error) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(%error, "could not make the runner non-dumpable");
    }
    if config.runner_token.is_none() {
        tracing::warn!("APP_RUNNER_TOKEN is not set: every /v1 request will answer 401");
    }
    let grace = config.shutdown_grace;
    let addr = config.addr;
    let readiness = readiness(config.api_internal_url.clone());
    let state = State::new(config, readiness, process.metrics.clone())?;
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(
        concurrency = state.config.concurrency,
        tenant_concurrency = state.config.tenant_concurrency,
        "runner starting"
    );
    let router = Arc::new(Router::<RunnerRoute>::new());
    let handler =
        move |_peer: SocketAddr, request| server::handle(state.clone(), router.clone(), request);
    serve(
        "runner",
        listener,
        handler,
        process.stop.cancelled_owned(),
        grace,
    )
    .await;
    Ok(())
}

/// The runner is ready when the API's internal listener, where it fetches modules and
/// documents, answers; without `API_INTERNAL_URL` it can run no stored module, so it is not.
fn readiness(api_internal_url: Option<String>) -> Readiness {
    Readiness::new().probe("internalApi", move || {
        let base = api_internal_url.clone();
        async move {
            match base {
                Some(base) => dependencies::probe_internal_api(&base).await,
                None => Err("API_INTERNAL_URL is not configured".to_owned()),
            }
        }
    })
}
