//! A vendor on loopback that counts connections and requests and answers what the test says:
//! a fixed JSON body, a body of a given size, or nothing at all (to provoke timeouts).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::net::TcpListener;

#[derive(Clone, Debug)]
pub enum Behaviour {
    /// 200 with this body.
    Json(String),
    /// 200 with a body of this many bytes.
    Bytes(usize),
    /// 200 with the body given for the request's path, 404 for other paths.
    ByPath(Vec<(String, String)>),
}

/// What the vendor last received.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Clone)]
pub struct Vendor {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    last_request: Arc<std::sync::Mutex<Option<SeenRequest>>>,
}

impl Vendor {
    pub async fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let vendor = Self {
            addr: listener.local_addr().expect("addr"),
            connections: Arc::default(),
            requests: Arc::default(),
            last_request: Arc::default(),
        };
        let served = vendor.clone();
        let connections = vendor.connections.clone();
        let on_connection = move || {
            connections.fetch_add(1, Ordering::SeqCst);
        };
        super::serve::spawn(
            listener,
            on_connection,
            move |request: Request<Incoming>| {
                let vendor = served.clone();
                let behaviour = behaviour.clone();
                async move {
                    vendor.requests.fetch_add(1, Ordering::SeqCst);
                    let method = request.method().to_string();
                    let path = request.uri().to_string();
                    let headers = request
                        .headers()
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
                        .collect();
                    let body = super::serve::read_body(request.into_body()).await;
                    *vendor.last_request.lock().expect("lock") = Some(SeenRequest {
                        method,
                        path: path.clone(),
                        headers,
                        body,
                    });
                    let mut status = 200;
                    let body = match behaviour {
                        Behaviour::ByPath(routes) => {
                            match routes.iter().find(|(p, _)| *p == path) {
                                Some((_, text)) => Bytes::from(text.clone()),
                                None => {
                                    status = 404;
                                    Bytes::from_static(b"{}")
                                }
                            }
                        }
                        Behaviour::Json(text) => Bytes::from(text),
                        Behaviour::Bytes(n) => Bytes::from(vec![b'x'; n]),
                    };
                    Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Full::new(body))
                        .expect("response")
                }
            },
        );
        vendor
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn last_request(&self) -> Option<SeenRequest> {
        self.last_request.lock().expect("lock").clone()
    }
}
