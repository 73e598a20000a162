//! SIGTERM stops accepting, drains in-flight requests, exits cleanly.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

use crate::support::client;
use crate::support::instance::Instance;

/// An object store whose every answer waits until the test releases it, and which says when a
/// request has reached it.
struct HeldStore {
    url: String,
    reached: Arc<Notify>,
    release: Arc<Semaphore>,
}

impl HeldStore {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let reached = Arc::new(Notify::new());
        let release = Arc::new(Semaphore::new(0));
        let (notify, gate) = (reached.clone(), release.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (notify, gate) = (notify.clone(), gate.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |_request| {
                        let (notify, gate) = (notify.clone(), gate.clone());
                        async move {
                            notify.notify_one();
                            let _held = gate.acquire().await;
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new())))
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            reached,
            release,
        }
    }
}

#[tokio::test]
async fn sigterm_drains_in_flight_requests_then_exits_zero() {
    // /health/ready probes the object store; this one holds the probe until released, so the
    // readiness request is in flight for as long as the test wants.
    let store = HeldStore::start().await;
    let mut instance = Instance::start(&[("STORAGE_ENDPOINT", store.url.as_str())]).await;
    let url = instance.url("/health/ready");
    let health = instance.url("/health");
    let in_flight = tokio::spawn(async move { client().get(url).send().await });
    store.reached.notified().await;

    let stopped = tokio::task::spawn_blocking(move || (instance.terminate(), instance));
    // The listener closes on the signal while the request is still held.
    let deadline = Instant::now() + Duration::from_secs(20);
    while client().get(&health).send().await.is_ok() {
        assert!(Instant::now() < deadline, "still accepting after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !in_flight.is_finished(),
        "the held request is still in flight"
    );
    store.release.add_permits(Semaphore::MAX_PERMITS);

    let answer = in_flight
        .await
        .expect("task")
        .expect("the in-flight request completes");
    // Its real answer: ready, or not ready when the probe's own 2 s ran out while held (a
    // slow machine) — never a connection closed under it.
    let status = answer.status().as_u16();
    let body: serde_json::Value = answer.json().await.expect("json");
    let checks = match status {
        200 => &body["checks"],
        503 => &body["error"]["details"]["checks"],
        other => panic!("unexpected {other}: {body}"),
    };
    assert!(checks["objectStore"].is_string(), "{body}");
    let (status, _instance) = stopped.await.expect("join");
    assert!(status.success(), "exit status {status:?}");
}
