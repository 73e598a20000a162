//! The accept loop of the tests' stand-in servers (internal API, vendors, collector): HTTP/1.1,
//! one task per connection, `handler` per request, until the test ends.

use std::convert::Infallible;
use std::future::Future;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Serves `handler` on `listener`; `on_connection` runs for every accepted connection.
pub fn spawn<H, F>(listener: TcpListener, on_connection: impl Fn() + Send + 'static, handler: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            on_connection();
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let answer = handler(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

/// A request body as bytes (empty if it could not be read).
pub async fn read_body(body: Incoming) -> Vec<u8> {
    use http_body_util::BodyExt;
    body.collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default()
}
