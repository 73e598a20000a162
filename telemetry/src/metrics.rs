//! Prometheus text exposition of the `metrics` facade, with the SPEC's histogram buckets.

use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::Error;

/// Buckets of millisecond histograms (SPEC "Metrics").
pub const MILLISECOND_BUCKETS: &[f64] =
    &[1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
/// Buckets of second histograms (SPEC "Metrics").
pub const SECOND_BUCKETS: &[f64] = &[1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0];
/// `http.server.request.duration` is in seconds but sub-second: the OpenTelemetry HTTP buckets.
pub const HTTP_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Histograms measured in seconds; every other `*.duration` histogram is in milliseconds.
const SECOND_HISTOGRAMS: &[&str] = &[
    "svc.workflow.run.duration",
    "svc.app.callback.wait",
    "svc.case.time_to_decision",
];

/// Installs the process-wide recorder and returns the handle that renders `/metrics`.
pub(crate) fn install() -> Result<PrometheusHandle, Error> {
    let mut builder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("http.server.request.duration".into()),
            HTTP_BUCKETS,
        )
        .map_err(|e| Error::Metrics(e.to_string()))?;
    for name in SECOND_HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).into()), SECOND_BUCKETS)
            .map_err(|e| Error::Metrics(e.to_string()))?;
    }
    builder = builder
        .set_buckets(MILLISECOND_BUCKETS)
        .map_err(|e| Error::Metrics(e.to_string()))?;
    let handle = builder
        .install_recorder()
        .map_err(|e| Error::Metrics(e.to_string()))?;
    spawn_upkeep(handle.clone());
    Ok(handle)
}

/// Histograms keep raw samples until upkeep folds them; without it memory grows with traffic.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(5));
                handle.run_upkeep();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "metrics upkeep thread not started");
    }
}
