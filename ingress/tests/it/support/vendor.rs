//! Fake vendors on loopback for the example app: for its asynchronous action every `POST
//! /sessions` opens a session with a fresh id (`{"sessionId": "vs-<uuid>"}`), as the vendor's API
//! would ([`start`]); for its synchronous one every request answers a score ([`scoring`]).

use std::convert::Infallible;

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
    serve(|| format!(r#"{{"sessionId":"vs-{}"}}"#, Uuid::new_v4())).await
}

/// A vendor answering every request with a score, as the example app's `check` reads it.
pub async fn scoring() -> String {
    serve(|| r#"{"score":0.2}"#.to_owned()).await
}

async fn serve(answer: fn() -> String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("vendor binds");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service =
                    service_fn(move |_request: Request<hyper::body::Incoming>| async move {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(answer()))))
                    });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{address}")
}
