//! The worker's engine-core metrics on `METRICS_PORT` + 1 (SPEC "Telemetry environment"): the
//! broker clients' own statistics ([`topics::client_stats`]), beside the instruments on
//! `METRICS_PORT`. The engine here is the Kafka cluster, so its core is the client library; its
//! consumer lag per stage and partition is what shows a stage falling behind.

use service::http::exposition;
use service::shutdown::CancellationToken;

/// Asks the broker clients for statistics and serves them on the port after `metrics_port`
/// (port 0, an ephemeral port, stays 0), until `stop`. To be called before any client is made.
pub(crate) fn serve(metrics_port: u16, stop: CancellationToken) {
    topics::client_stats::enable();
    let port = match metrics_port {
        0 => 0,
        port => match port.checked_add(1) {
            Some(next) => next,
            None => {
                tracing::error!(metrics_port, "no port after METRICS_PORT for core metrics");
                return;
            }
        },
    };
    let render = || async { topics::client_stats::render() };
    tokio::spawn(exposition::serve(port, "core-metrics", render, stop));
}
