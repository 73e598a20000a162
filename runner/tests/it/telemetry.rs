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

/// SPEC "Logs": runner lines of a call carry `tenantId`, `appName` and `callId`, the lines
/// written while its module is fetched and compiled included; inside a request that continues a
/// caller's `traceparent`, every line carries the caller's trace, with export off.
#[tokio::test]
async fn every_line_of_a_call_names_its_tenant_app_and_call_and_the_callers_trace() {
    let upstream = Upstream::start().await;
    let log = tempfile::NamedTempFile::new().expect("log file");
    let runner = Runner::start_logging_to(&upstream.url(), log.path()).await;
    // A module this runner has never seen, so the call fetches and compiles it.
    let module = upstream.add_module(
        &Fixture::answering(&format!(
            r#"{{"status":"ok","output":{{"n":"{}"}}}}"#,
            uuid::Uuid::new_v4()
        ))
        .bytes(),
    );
    let call_id = format!("call-{}", uuid::Uuid::new_v4());
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let response = reqwest::Client::new()
        .post(runner.url("/v1/invoke"))
        .bearer_auth(crate::support::RUNNER_TOKEN)
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .json(&json!({
            "module": module,
            "app": {"name": "labelled"},
            "call": {"id": call_id, "tenantId": "2e4f6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c"},
            "action": "run",
            "config": {},
            "input": {},
            "timeoutMs": 10_000
        }))
        .send()
        .await
        .expect("runner answers");
    assert_eq!(response.status(), 200);
    drop(runner); // SIGTERM: the log is flushed

    let text = std::fs::read_to_string(log.path()).expect("log");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .collect();
    let compiled = lines
        .iter()
        .find(|line| line["message"] == "module compiled")
        .unwrap_or_else(|| panic!("the module was compiled during the call:\n{text}"));
    let access = lines
        .iter()
        .find(|line| line["message"] == "request")
        .unwrap_or_else(|| panic!("an access line:\n{text}"));
    for line in [compiled, access] {
        assert_eq!(
            line["tenantId"], "2e4f6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c",
            "{line}"
        );
        assert_eq!(line["appName"], "labelled", "{line}");
        assert_eq!(line["callId"], call_id.as_str(), "{line}");
        assert_eq!(line["trace_id"], trace, "{line}");
        assert_eq!(line["span_id"], "00f067aa0ba902b7", "{line}");
    }
    assert!(access["requestId"].is_string(), "{access}");
}
