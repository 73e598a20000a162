//! A stand-in OpenTelemetry collector: accepts OTLP/HTTP posts on any path, keeps each path and
//! body, and answers 200 with an empty (valid) protobuf answer.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
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
        super::serve::spawn(
            listener,
            || {},
            move |request: Request<Incoming>| {
                let kept = kept.clone();
                async move {
                    let path = request.uri().path().to_owned();
                    let body = super::serve::read_body(request.into_body()).await;
                    kept.lock().expect("lock").push((path, body));
                    let mut answer = Response::new(Full::new(Bytes::new()));
                    answer.headers_mut().insert(
                        "content-type",
                        "application/x-protobuf".parse().expect("header"),
                    );
                    answer
                }
            },
        );
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
