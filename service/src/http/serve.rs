//! The accept loop every service's HTTP listener uses, with graceful shutdown: on the signal
//! the listener closes, in-flight requests finish (up to the grace period), then the loop
//! returns.
//!
//! Each listener announces the address it is bound to in a `listening` log line (`listener`,
//! `addr`), so a listener bound to port 0 tells which port it got.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

/// Serves `listener` until `shutdown` resolves, then drains connections for at most `grace`.
pub async fn serve<H, F, B>(
    name: &'static str,
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) where
    H: Fn(SocketAddr, Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match listener.local_addr() {
        Ok(addr) => tracing::info!(listener = name, %addr, "listening"),
        Err(error) => tracing::warn!(listener = name, %error, "listening on an unknown address"),
    }
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(listener = name, %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let service = service_fn(move |request| {
            let answer = handler(peer, request);
            async move { Ok::<_, std::convert::Infallible>(answer.await) }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(listener = name, %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!(listener = name, "draining in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!(listener = name, "drained"),
        () = tokio::time::sleep(grace) => {
            tracing::warn!(listener = name, ?grace, "grace period over; closing remaining connections");
        }
    }
}
