//! OTLP/HTTP export through the real runner (SPEC Operations "Telemetry environment", "Traces",
//! "Metrics" rule 1): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans go to `/v1/traces` and the
//! metrics also served on `/metrics` are pushed to `/v1/metrics`.

use std::time::{Duration, Instant};

use crate::support::collector::Collector;
use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::wat::Fixture;
use serde_json::json;

#[tokio::test]
async fn spans_and_metrics_are_pushed_to_the_otlp_endpoint() {
    let collector = Collector::start().await;
    let upstream = Upstream::start().await;
    let runner = Runner::start(
        &upstream.url(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
            // Shorter than the 15 s default, so the test does not wait for it.
            ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
            ("OTEL_BSP_SCHEDULE_DELAY", "300"),
        ],
    )
    .await;
    let module = upstream.add_module(&Fixture::answering(r#"{"status":"ok","output":{}}"#).bytes());
    let (status, body) = runner
        .post(
            "/v1/invoke",
            &json!({
                "module": module,
                "app": {"name": "pushed"},
                "call": {"id": "call-otlp", "tenantId": "2e4f6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c"},
                "action": "run",
                "config": {},
                "input": {},
                "timeoutMs": 2000
            }),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let metrics = [
        "svc.app.call.duration",
        "svc.app.calls.in_flight",
        "http.server.request.duration",
        "pushed",
    ];
    while !(collector.received("/v1/metrics", &metrics)
        && collector.received("/v1/traces", &["http.request", "app.call", "runner"]))
    {
        assert!(
            Instant::now() < deadline,
            "nothing pushed with {metrics:?} and the request span; posts to {:?}",
            collector.paths()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
