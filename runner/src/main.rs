//! `runner`: runs vendor app modules for the API and the pipeline (`/v1/*`), with health and
//! metrics on the same listener (`RUNNER_PORT`). `runner compile-module` is the compiler child
//! the server spawns for each compilation (`runner::compiler`), not a command for people.

use std::process::ExitCode;
use std::sync::Arc;

use runner::config::Config;
use runner::state::State;
use runner::{dependencies, server};
use telemetry::health::{self, Probes};
use telemetry::{http_server, shutdown};
use tokio::net::TcpListener;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if let Some((first, rest)) = args.split_first()
        && first == runner::compiler::child::ARG
    {
        return runner::compiler::child::main(rest);
    }
    telemetry::service::main("runner", env!("CARGO_PKG_VERSION"), |telemetry| {
        Box::pin(run(telemetry))
    })
}

async fn run(telemetry: &telemetry::Telemetry) -> Result<(), Box<dyn std::error::Error>> {
    // Its compiler children run as the same user: keep them (and anyone else of this user) out
    // of this process's memory and environment, which hold the runner token and call secrets.
    #[cfg(target_os = "linux")]
    if let Err(error) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        tracing::warn!(%error, "could not make the runner non-dumpable");
    }
    let config = Config::from_env()?;
    if config.runner_token.is_none() {
        tracing::warn!("APP_RUNNER_TOKEN is not set: every /v1 request will answer 401");
    }
    let grace = config.shutdown_grace;
    let addr = config.addr;
    let api = config.api_internal_url.clone();
    let state = State::new(config)?;
    let probes: Probes = Arc::new(move || {
        let api = api.clone();
        Box::pin(async move {
            let internal_api = health::check("internalApi", async {
                match &api {
                    Some(base) => dependencies::probe_internal_api(base).await,
                    None => Err("API_INTERNAL_URL is not configured".into()),
                }
            })
            .await;
            vec![internal_api]
        })
    });
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(
        addr = %listener.local_addr()?,
        concurrency = state.config.concurrency,
        tenant_concurrency = state.config.tenant_concurrency,
        "runner listening"
    );
    let stop = shutdown::on_signal();
    let metrics = telemetry.metrics_handle();
    let handler = move |_peer, request| {
        server::handle(state.clone(), probes.clone(), metrics.clone(), request)
    };
    http_server::serve("runner", listener, handler, stop.cancelled_owned(), grace).await;
    tracing::info!("runner stopped");
    Ok(())
}
