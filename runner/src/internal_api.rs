//! The API's internal listener, the runner's only trusted upstream: module bytes by hash (runner
//! bearer) and a call's documents (per-call token). Not reachable by vendor HTTP, which refuses
//! private addresses; this client is configured from `API_INTERNAL_URL` only.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use schema::module::{MAX_MODULE_BYTES, Sha256};

/// Largest document a call may read.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;
const MODULE_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub(crate) struct InternalApi {
    base: String,
    runner_token: Option<String>,
    client: reqwest::Client,
}

/// Why an upstream fetch failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("not found")]
    NotFound,
    #[error("refused ({0})")]
    Refused(u16),
    #[error("too large")]
    TooLarge,
    #[error("bytes do not match their hash")]
    HashMismatch,
    #[error("timed out")]
    Timeout,
    #[error("unreachable: {0}")]
    Unreachable(String),
}

impl FetchError {
    pub(crate) fn code(&self) -> &'static str {
        match self {
            FetchError::NotFound => "not_found",
            FetchError::Refused(_) => "refused",
            FetchError::TooLarge => "too_large",
            FetchError::HashMismatch => "hash_mismatch",
            FetchError::Timeout => "timeout",
            FetchError::Unreachable(_) => "unavailable",
        }
    }
}

/// A document as the API serves it.
#[derive(Debug)]
pub(crate) struct Document {
    pub content_type: String,
    pub body: Bytes,
}

impl InternalApi {
    pub(crate) fn new(base: &str, runner_token: Option<String>) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            runner_token,
            client,
        })
    }

    /// The module named by `sha256`, verified against it.
    pub(crate) async fn module(&self, sha256: &Sha256) -> Result<Bytes, FetchError> {
        let mut request = self
            .client
            .get(format!("{}/internal/app-modules/{sha256}", self.base))
            .timeout(MODULE_FETCH_TIMEOUT);
        if let Some(token) = &self.runner_token {
            request = request.bearer_auth(token);
        }
        let bytes = fetch(request, MAX_MODULE_BYTES).await?.1;
        if Sha256::of(&bytes) != *sha256 {
            return Err(FetchError::HashMismatch);
        }
        Ok(bytes)
    }

    /// `GET /internal/app-calls/:callId/documents`: the list, passed to the module as JSON.
    pub(crate) async fn documents(
        &self,
        call_id: &str,
        call_token: &str,
        timeout: Duration,
    ) -> Result<serde_json::Value, FetchError> {
        let request = self
            .client
            .get(format!(
                "{}/internal/app-calls/{call_id}/documents",
                self.base
            ))
            .bearer_auth(call_token)
            .timeout(timeout);
        let (_, body) = fetch(request, MAX_DOCUMENT_BYTES).await?;
        serde_json::from_slice(&body).map_err(|e| FetchError::Unreachable(e.to_string()))
    }

    /// `GET /internal/app-calls/:callId/documents/:id`.
    pub(crate) async fn document(
        &self,
        call_id: &str,
        document_id: &str,
        call_token: &str,
        timeout: Duration,
    ) -> Result<Document, FetchError> {
        let request = self
            .client
            .get(format!(
                "{}/internal/app-calls/{call_id}/documents/{document_id}",
                self.base
            ))
            .bearer_auth(call_token)
            .timeout(timeout);
        let (content_type, body) = fetch(request, MAX_DOCUMENT_BYTES).await?;
        Ok(Document { content_type, body })
    }
}

/// Sends `request` and reads at most `limit` bytes of a 200 answer.
async fn fetch(
    request: reqwest::RequestBuilder,
    limit: usize,
) -> Result<(String, Bytes), FetchError> {
    let response = request.send().await.map_err(transport)?;
    match response.status().as_u16() {
        200 => {}
        404 => return Err(FetchError::NotFound),
        status @ (401 | 403) => return Err(FetchError::Refused(status)),
        status => return Err(FetchError::Unreachable(format!("answered {status}"))),
    }
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(FetchError::TooLarge);
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(transport)?;
        if body.len() + chunk.len() > limit {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok((content_type, body.into()))
}

fn transport(error: reqwest::Error) -> FetchError {
    if error.is_timeout() {
        FetchError::Timeout
    } else {
        FetchError::Unreachable(error.to_string())
    }
}
