use service::testing::ServiceProcess;

use crate::support::instance::Instance;
use crate::support::{StackUrls, client, stack};

#[tokio::test]
async fn liveness_and_readiness_answer_and_are_not_counted() {
    let http = client();
    let live = http.get(stack().api("/health")).send().await.expect("live");
    assert_eq!(live.status(), 200);
    assert!(live.headers().get("x-request-id").is_some());
    assert_eq!(live.headers()["cache-control"], "no-store");
    assert!(
        live.headers().get("x-ratelimit-limit").is_none(),
        "health is never counted"
    );
    let body: serde_json::Value = live.json().await.expect("json");
    assert_eq!(body["status"], "ok");

    let ready = http
        .get(stack().api("/health/ready"))
        .send()
        .await
        .expect("ready");
    assert_eq!(ready.status(), 200);
    assert!(ready.headers().get("x-ratelimit-limit").is_none());
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body["status"], "ready");
    for dependency in ["postgres", "redis", "broker", "objectStore"] {
        assert_eq!(body["checks"][dependency], "ok", "{body}");
    }
}

#[tokio::test]
async fn metrics_expose_request_durations_in_text_format() {
    let http = client();
    // A counted request so the histogram has a sample.
    let _ = http
        .get(stack().api("/no-such-route"))
        .send()
        .await
        .expect("request");
    let metrics = http
        .get(stack().api("/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/plain")
    );
    let text = metrics.text().await.expect("text");
    assert!(
        text.contains("http_server_request_duration_bucket"),
        "{text}"
    );
    assert!(text.contains("http_route=\"unmatched\""), "{text}");
    assert!(
        !text.contains("http_route=\"/health\""),
        "health is not measured"
    );
}

#[tokio::test]
async fn pipeline_and_runner_expose_health_the_same_way() {
    let http = client();
    for base in [stack().var("PIPELINE_URL"), stack().var("RUNNER_URL")] {
        let live = http
            .get(format!("{base}/health"))
            .send()
            .await
            .expect("live");
        assert_eq!(live.status(), 200, "{base}");
        let body: serde_json::Value = live.json().await.expect("json");
        assert_eq!(body["status"], "ok");
        let ready = http
            .get(format!("{base}/health/ready"))
            .send()
            .await
            .expect("ready");
        assert_eq!(ready.status(), 200, "{base}");
        let metrics = http
            .get(format!("{base}/metrics"))
            .send()
            .await
            .expect("metrics");
        assert_eq!(metrics.status(), 200, "{base}");
        let missing = http.get(format!("{base}/nope")).send().await.expect("404");
        crate::support::assert_envelope(missing, 404, "not_found").await;
    }
}

/// SPEC §4.14: the worker's `/healthz` lists its workers by task queue; the engine's connection
/// (`temporal`) is the broker's here.
#[tokio::test]
async fn the_pipeline_reports_its_workers_and_broker_on_healthz() {
    let response = client()
        .get(format!("{}/healthz", stack().var("PIPELINE_URL")))
        .send()
        .await
        .expect("healthz");
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(body["temporal"], "connected", "{body}");
    let workers = body["workers"].as_array().expect("workers");
    assert!(
        workers
            .iter()
            .any(|w| w["taskQueue"] == "outbox" && w["state"] == "RUNNING"),
        "{body}"
    );
}

/// A deployment without object storage is ready: readiness says the store is not configured.
#[tokio::test]
async fn without_object_storage_the_api_is_ready_and_says_so() {
    let instance = Instance::start(&[("STORAGE_ENDPOINT", "")]).await;
    let ready = client()
        .get(instance.url("/health/ready"))
        .send()
        .await
        .expect("ready");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body["checks"]["objectStore"], "not configured", "{body}");
}

/// `METRICS_PORT` serves the text exposition on a listener of its own, and nothing else there.
#[tokio::test]
async fn metrics_port_serves_the_exposition_on_its_own_listener() {
    let process = ServiceProcess::start(
        "ingress",
        &[
            ("API_PORT", "0"),
            ("API_INTERNAL_PORT", "0"),
            ("METRICS_PORT", "0"),
        ],
        &["public", "internal", "metrics"],
        None,
    )
    .await;
    let metrics = client()
        .get(process.url("metrics", "/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/plain")
    );
    let other = client()
        .get(process.url("metrics", "/health"))
        .send()
        .await
        .expect("404");
    crate::support::assert_envelope(other, 404, "not_found").await;
}

/// SPEC "Telemetry environment": the stack gives every process a `METRICS_PORT`, and the worker
/// serves its engine-core metrics (here: its broker clients') on the port after it, with each
/// stage's consumer lag and the broker's connection.
#[tokio::test]
async fn every_process_serves_metrics_and_the_worker_its_core_metrics_on_the_next_port() {
    let http = client();
    for key in [
        "INGRESS_METRICS_URL",
        "RUNNER_METRICS_URL",
        "PIPELINE_METRICS_URL",
    ] {
        let answer = http
            .get(format!("{}/metrics", stack().var(key)))
            .send()
            .await
            .expect("metrics");
        assert_eq!(answer.status(), 200, "{key}");
        let text = answer.text().await.expect("text");
        assert!(text.contains("# TYPE "), "{key}: {text}");
    }
    let core = format!("{}/metrics", stack().var("PIPELINE_CORE_METRICS_URL"));
    assert_eq!(
        stack().var("PIPELINE_CORE_METRICS_URL"),
        format!(
            "http://127.0.0.1:{}",
            stack()
                .var("PIPELINE_METRICS_PORT")
                .parse::<u16>()
                .expect("port")
                + 1
        )
    );
    // Clients report every 15 s; a stage's consumer has its partitions once the group settled,
    // and fetches all the time (its round trips are measured even on an idle stack). A
    // partition's lag shows once its group committed an offset there (client_stats' own test).
    let wanted = [
        "kafka_consumer_assigned_partitions{client=\"pipeline-runs\"}",
        "kafka_producer_queue_messages{client=\"pipeline\"}",
        "kafka_broker_rtt_seconds{client=\"pipeline-runs\"",
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = http
            .get(&core)
            .send()
            .await
            .expect("core metrics")
            .text()
            .await
            .expect("text");
        let up = text.lines().any(|l| {
            l.starts_with("kafka_broker_up{client=\"pipeline-runs\",") && l.ends_with(" 1")
        });
        if up && wanted.iter().all(|w| text.contains(w)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the core metrics lack one of {wanted:?} or the broker up:\n{text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}
