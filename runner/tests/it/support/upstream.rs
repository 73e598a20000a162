//! A stand-in for the API's internal listener: serves the modules it was given by sha256
//! (runner bearer required) and a call's documents (call token required), and counts requests.
//! The real route of ingress is tested in ingress's own tests.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::net::TcpListener;

use super::{RUNNER_TOKEN, sha256_hex};

/// A call's documents by id: (content type, body).
type Documents = HashMap<String, (String, Vec<u8>)>;

#[derive(Default)]
struct Shared {
    modules: Mutex<HashMap<String, Vec<u8>>>,
    /// Documents by (call id, token).
    documents: Mutex<HashMap<(String, String), Documents>>,
    module_fetches: AtomicUsize,
    document_fetches: AtomicUsize,
}

#[derive(Clone)]
pub struct Upstream {
    shared: Arc<Shared>,
    pub addr: SocketAddr,
}

impl Upstream {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared::default());
        let served = shared.clone();
        super::serve::spawn(
            listener,
            || {},
            move |request| {
                let answer = answer(&served, request);
                async move { answer }
            },
        );
        Self { shared, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Publishes `bytes`; answers their sha256.
    pub fn add_module(&self, bytes: &[u8]) -> String {
        let sha = sha256_hex(bytes);
        self.shared
            .modules
            .lock()
            .expect("lock")
            .insert(sha.clone(), bytes.to_vec());
        sha
    }

    /// Serves `bytes` under a hash that does not match them.
    pub fn add_corrupt_module(&self, claimed_sha: &str, bytes: &[u8]) {
        self.shared
            .modules
            .lock()
            .expect("lock")
            .insert(claimed_sha.to_owned(), bytes.to_vec());
    }

    pub fn add_document(
        &self,
        call_id: &str,
        token: &str,
        id: &str,
        content_type: &str,
        body: &[u8],
    ) {
        self.shared
            .documents
            .lock()
            .expect("lock")
            .entry((call_id.to_owned(), token.to_owned()))
            .or_default()
            .insert(id.to_owned(), (content_type.to_owned(), body.to_vec()));
    }

    pub fn module_fetches(&self) -> usize {
        self.shared.module_fetches.load(Ordering::SeqCst)
    }

    pub fn document_fetches(&self) -> usize {
        self.shared.document_fetches.load(Ordering::SeqCst)
    }
}

fn answer(shared: &Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let bearer = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["health"] => respond(200, "application/json", b"{\"status\":\"ok\"}".to_vec()),
        ["internal", "app-modules", sha] => {
            shared.module_fetches.fetch_add(1, Ordering::SeqCst);
            if bearer != RUNNER_TOKEN {
                return respond(401, "application/json", b"{}".to_vec());
            }
            match shared.modules.lock().expect("lock").get(*sha) {
                Some(bytes) => respond(200, "application/wasm", bytes.clone()),
                None => respond(404, "application/json", b"{}".to_vec()),
            }
        }
        ["internal", "app-calls", call, "documents", rest @ ..] => {
            shared.document_fetches.fetch_add(1, Ordering::SeqCst);
            let documents = shared.documents.lock().expect("lock");
            let Some(set) = documents.get(&((*call).to_owned(), bearer)) else {
                return respond(401, "application/json", b"{}".to_vec());
            };
            match rest {
                [] => {
                    let items: Vec<_> = set
                        .iter()
                        .map(|(id, (ct, body))| {
                            serde_json::json!({"id": id, "name": id, "contentType": ct, "size": body.len()})
                        })
                        .collect();
                    respond(
                        200,
                        "application/json",
                        serde_json::to_vec(&serde_json::json!({"items": items})).expect("json"),
                    )
                }
                [id] => match set.get(*id) {
                    Some((ct, body)) => respond(200, ct, body.clone()),
                    None => respond(404, "application/json", b"{}".to_vec()),
                },
                _ => respond(404, "application/json", b"{}".to_vec()),
            }
        }
        _ => respond(404, "application/json", b"{}".to_vec()),
    }
}

fn respond(status: u16, content_type: &str, body: Vec<u8>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}
