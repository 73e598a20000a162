//! A stand-in OpenTelemetry collector: accepts OTLP/HTTP posts on any path, keeps each path and
//! body, and answers 200 with an empty (valid) protobuf answer.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

type Posts = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

pub struct Collector {
    posts: Posts,
    pub url: String,
}

impl Collector {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let posts = Posts::default();
        let kept = posts.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                        let kept = kept.clone();
                        async move {
                            let path = request.uri().path().to_owned();
                            let body = request
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes().to_vec())
                                .unwrap_or_default();
                            kept.lock().expect("lock").push((path, body));
                            let mut answer = Response::new(Full::new(Bytes::new()));
                            answer.headers_mut().insert(
                                "content-type",
                                "application/x-protobuf".parse().expect("header"),
                            );
                            Ok::<_, Infallible>(answer)
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { posts, url }
    }

    /// Whether a post to `path` has arrived whose body contains every one of `needles`.
    pub fn received(&self, path: &str, needles: &[&str]) -> bool {
        self.posts.lock().expect("lock").iter().any(|(at, body)| {
            at == path
                && needles
                    .iter()
                    .all(|needle| body.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
    }

    pub fn paths(&self) -> Vec<String> {
        let posts = self.posts.lock().expect("lock");
        posts.iter().map(|(path, _)| path.clone()).collect()
    }
}
