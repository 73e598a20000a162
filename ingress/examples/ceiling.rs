//! The benchmark ceiling: a minimal hyper 1 server answering a fixed JSON body on every path,
//! on the same runtime, connection settings and machine as ingress. `loadtests/run` measures it
//! in the same run as the API, so figures are ratios to what hyper alone does here.
//!
//! `cargo run --release -p ingress --example ceiling -- 127.0.0.1:18999`

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Response, header};
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

const BODY: &[u8] = br#"{"items":[],"total":0,"totalIsEstimate":false}"#;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18999".into())
        .parse()
        .map_err(std::io::Error::other)?;
    let listener = TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(|_request| async {
                let mut response = Response::new(Full::new(Bytes::from_static(BODY)));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("application/json"),
                );
                Ok::<_, Infallible>(response)
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
