//! `runner`: serves health on `RUNNER_PORT`. The `/v1/*` routes arrive with the engine.

use std::process::ExitCode;
use std::sync::Arc;

use runner::config::Config;
use runner::dependencies;
use telemetry::health::{self, Probes};
use telemetry::shutdown;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("runner: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let telemetry = match telemetry::init("runner", env!("CARGO_PKG_VERSION")) {
            Ok(telemetry) => telemetry,
            Err(error) => {
                eprintln!("runner: {error}");
                return ExitCode::FAILURE;
            }
        };
        let code = match run(&telemetry).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                tracing::error!(%error, "runner stopped");
                eprintln!("runner: {error}");
                ExitCode::FAILURE
            }
        };
        telemetry.shutdown();
        code
    })
}

async fn run(telemetry: &telemetry::Telemetry) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_env()?;
    let stop = shutdown::on_signal();
    let api = config.api_internal_url.clone();
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
    health::serve(
        config.addr,
        probes,
        telemetry.metrics_handle(),
        stop.cancelled_owned(),
    )
    .await?;
    tracing::info!("runner stopped");
    Ok(())
}
