//! Fake vendors on loopback for the example app: for its asynchronous action every `POST
//! /sessions` opens a session with a fresh id (`{"sessionId": "vs-<uuid>"}`), as the vendor's API
//! would ([`start`]); for its synchronous one every request answers a score, the first one late
//! when asked ([`scoring`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use uuid::Uuid;

/// The vendor's base URL (`config.baseUrl` of the install); it serves until the test ends.
pub async fn start() -> String {
    serve(|| {
        (
            Duration::ZERO,
            format!(r#"{{"sessionId":"vs-{}"}}"#, Uuid::new_v4()),
        )
    })
    .await
}

/// A vendor answering a score, as the example app's `check` reads it; the first request only
/// after `first_after` (past the action's timeout, it makes the first call time out).
pub async fn scoring(first_after: Duration) -> String {
    let answered = AtomicUsize::new(0);
    serve(move || {
        let delay = if answered.fetch_add(1, Ordering::SeqCst) == 0 {
            first_after
        } else {
            Duration::ZERO
        };
        (delay, r#"{"score":0.2}"#.to_owned())
    })
    .await
}

/// Serves `answer` (how long to wait, then what body) to every request.
async fn serve(answer: impl Fn() -> (Duration, String) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("vendor binds");
    let address = listener.local_addr().expect("address");
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let answer = Arc::clone(&answer);
            tokio::spawn(async move {
                let service = service_fn(move |_request: Request<hyper::body::Incoming>| {
                    let (delay, body) = answer();
                    async move {
                        tokio::time::sleep(delay).await;
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}")
}
