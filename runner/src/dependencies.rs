//! What the runner depends on at run time: the API's internal listener (module and document
//! fetch). Readiness reports it.

use std::time::Duration;

use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// `GET {api_internal_url}/health` answers 200.
pub(crate) async fn probe_internal_api(base: &str) -> Result<(), String> {
    let uri: hyper::Uri = format!("{}/health", base.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("API_INTERNAL_URL: {e}"))?;
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build_http();
    let response = client.get(uri).await.map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("answered {}", response.status()))
    }
}
