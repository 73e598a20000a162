//! The benchmark ceiling: a minimal hyper 1 server answering the same JSON body on every path,
//! on the same runtime, connection settings and machine as ingress. `loadtests/run` measures it
//! in the same run as the API, with the bytes of the API's own answer to the benchmarked route,
//! so figures are ratios to what hyper alone does here with the same response.
//!
//! `cargo run --release -p ingress --example ceiling -- 127.0.0.1:18999 [body.json]`
//! (without a file: the 46-byte answer of an empty list)

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Response, header};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

const EMPTY_LIST: &[u8] = br#"{"items":[],"total":0,"totalIsEstimate":false}"#;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:18999".into())
        .parse()
        .map_err(std::io::Error::other)?;
    let body = match args.next() {
        Some(path) => Bytes::from(std::fs::read(path)?),
        None => Bytes::from_static(EMPTY_LIST),
    };
    let listener = TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |_request| {
                let mut response = Response::new(Full::new(body.clone()));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("application/json"),
                );
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
