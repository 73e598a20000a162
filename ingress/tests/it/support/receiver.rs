//! A tenant's webhook receiver on loopback, for the outbound delivery tests: it keeps every
//! request it gets (headers and body) and answers as the test sets it: fail the first N
//! requests with a 500 and a long body, or hold each answer for a while. Signatures are checked
//! by the tests with the `standardwebhooks` crate (Standard Webhooks' own Rust library), never
//! with the platform's code.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// Whether `secret` (`whsec_...`) verifies this request, per the Standard Webhooks library.
    pub fn verifies_with(&self, secret: &str) -> bool {
        let webhook = standardwebhooks::Webhook::new(secret).expect("a Standard Webhooks secret");
        webhook.verify(&self.body, &self.headers).is_ok()
    }
}

#[derive(Debug, Default)]
struct Behaviour {
    /// Requests still to be failed.
    failures: usize,
    /// How long each answer waits.
    delay: Duration,
}

/// A running receiver; it serves until the test ends.
#[derive(Debug, Clone)]
pub struct Receiver {
    /// Where a tenant's endpoint points: a path and a query of the receiver's own.
    pub url: String,
    /// `http://host:port` alone.
    pub origin: String,
    received: Arc<Mutex<Vec<Received>>>,
    behaviour: Arc<Mutex<Behaviour>>,
}

/// What a failing answer's body holds: longer than an attempt keeps.
pub const FAILURE_BODY: &str = "receiver says no. ";

impl Receiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("receiver binds");
        let address = listener.local_addr().expect("address");
        let receiver = Self {
            url: format!("http://{address}/hooks/risk?token=receiver-own"),
            origin: format!("http://{address}"),
            received: Arc::default(),
            behaviour: Arc::default(),
        };
        let serving = receiver.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let serving = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let serving = serving.clone();
                        async move { Ok::<_, Infallible>(serving.answer(request).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        receiver
    }

    /// The next `count` requests are answered 500.
    pub fn fail_next(&self, count: usize) {
        self.behaviour.lock().expect("lock").failures = count;
    }

    /// Each answer waits `delay` first.
    pub fn delay(&self, delay: Duration) {
        self.behaviour.lock().expect("lock").delay = delay;
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// Waits until `count` requests arrived (at most `limit`), and answers them all.
    pub async fn until(&self, count: usize, limit: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} of {count} requests arrived",
                received.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn answer(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = request.into_parts();
        let body = body
            .collect()
            .await
            .map(|body| body.to_bytes())
            .unwrap_or_default();
        self.received.lock().expect("lock").push(Received {
            path: parts.uri.path().to_owned(),
            headers: parts.headers,
            body,
        });
        let (fail, delay) = {
            let mut behaviour = self.behaviour.lock().expect("lock");
            let fail = behaviour.failures > 0;
            behaviour.failures = behaviour.failures.saturating_sub(1);
            (fail, behaviour.delay)
        };
        tokio::time::sleep(delay).await;
        let (status, body) = if fail {
            (StatusCode::INTERNAL_SERVER_ERROR, FAILURE_BODY.repeat(40))
        } else {
            (StatusCode::NO_CONTENT, String::new())
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    }
}
