//! SIGTERM stops accepting, drains in-flight requests, exits cleanly.

use std::time::{Duration, Instant};

use crate::support::client;
use crate::support::instance::Instance;

#[tokio::test]
async fn sigterm_drains_in_flight_requests_then_exits_zero() {
    // A broker nobody answers makes /health/ready take its full probe timeout (2 s): a slow
    // request to be in flight when the signal arrives.
    let mut instance = Instance::start(&[("KAFKA_BROKERS", "127.0.0.1:1")]).await;
    let url = instance.url("/health/ready");
    let started = Instant::now();
    let in_flight = tokio::spawn(async move { client().get(url).send().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = tokio::task::spawn_blocking(move || {
        let status = instance.terminate();
        (status, instance)
    });
    let answer = in_flight
        .await
        .expect("task")
        .expect("in-flight request completes");
    assert_eq!(
        answer.status(),
        503,
        "the drained request got its real answer"
    );
    let body: serde_json::Value = answer.json().await.expect("json");
    assert_eq!(
        body["error"]["details"]["unreachable"],
        serde_json::json!(["broker"])
    );
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let (status, instance) = status.await.expect("join");
    assert!(status.success(), "exit status {status:?}");
    let refused = client().get(instance.url("/health")).send().await;
    assert!(refused.is_err(), "no longer accepting");
}
