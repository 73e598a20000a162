//! A runner started through `./stack run runner` on a port it picks itself, with its own
//! upstream and settings; stopped (SIGTERM) when dropped.

use std::net::SocketAddr;

use service::testing::ServiceProcess;

use super::RUNNER_TOKEN;

pub struct Runner {
    process: ServiceProcess,
    pub addr: SocketAddr,
    /// The module cache directory made for this runner (none when the test gave its own).
    _cache: Option<tempfile::TempDir>,
}

impl Runner {
    /// Starts a runner whose internal API is `upstream_url`, with `env` on top.
    pub async fn start(upstream_url: &str, env: &[(&str, &str)]) -> Self {
        let cache = tempfile::Builder::new()
            .prefix("runner-cache")
            .tempdir()
            .expect("temp dir");
        let dir = cache.path().to_owned();
        Self::launch(upstream_url, env, &dir, Some(cache), None).await
    }

    /// Starts a runner like [`Runner::start`] that writes its log lines (level info) to `log`.
    pub async fn start_logging_to(upstream_url: &str, log: &std::path::Path) -> Self {
        let cache = tempfile::Builder::new()
            .prefix("runner-cache")
            .tempdir()
            .expect("temp dir");
        let dir = cache.path().to_owned();
        Self::launch(
            upstream_url,
            &[("LOG_LEVEL", "info")],
            &dir,
            Some(cache),
            Some(log),
        )
        .await
    }

    /// Starts a runner like [`Runner::start`] whose compiled-module disk cache
    /// (`RUNNER_MODULE_CACHE_DIR`) is `cache_dir`, which the test owns: runners started one after
    /// the other with the same directory share their compiled modules.
    pub async fn start_with_cache(
        upstream_url: &str,
        env: &[(&str, &str)],
        cache_dir: &std::path::Path,
    ) -> Self {
        Self::launch(upstream_url, env, cache_dir, None, None).await
    }

    async fn launch(
        upstream_url: &str,
        env: &[(&str, &str)],
        cache_dir: &std::path::Path,
        cache: Option<tempfile::TempDir>,
        log: Option<&std::path::Path>,
    ) -> Self {
        let cache_dir = cache_dir.to_string_lossy().into_owned();
        let mut all = vec![
            ("RUNNER_HOST", "127.0.0.1"),
            ("RUNNER_PORT", "0"),
            ("API_INTERNAL_URL", upstream_url),
            ("APP_RUNNER_TOKEN", RUNNER_TOKEN),
            ("RUNNER_MODULE_CACHE_DIR", cache_dir.as_str()),
            ("LOG_LEVEL", "warn"),
        ];
        all.extend_from_slice(env);
        let process = ServiceProcess::start("runner", &all, &["runner"], log).await;
        let addr = process.addr("runner");
        Self {
            process,
            addr,
            _cache: cache,
        }
    }

    pub fn url(&self, path: &str) -> String {
        self.process.url("runner", path)
    }

    /// POSTs `body` as JSON to `path` with the runner bearer.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let response = reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(RUNNER_TOKEN)
            .json(body)
            .send()
            .await
            .expect("runner answers");
        let status = response.status().as_u16();
        (
            status,
            response.json().await.unwrap_or(serde_json::Value::Null),
        )
    }

    /// The runner's `/metrics` text.
    pub async fn metrics(&self) -> String {
        reqwest::get(self.url("/metrics"))
            .await
            .expect("metrics answer")
            .text()
            .await
            .expect("text")
    }

    /// POSTs module bytes to `/v1/inspect`.
    pub async fn inspect(&self, bytes: &[u8]) -> (u16, serde_json::Value) {
        let response = reqwest::Client::new()
            .post(self.url("/v1/inspect"))
            .bearer_auth(RUNNER_TOKEN)
            .header("content-type", "application/wasm")
            .body(bytes.to_vec())
            .send()
            .await
            .expect("runner answers");
        let status = response.status().as_u16();
        (
            status,
            response.json().await.unwrap_or(serde_json::Value::Null),
        )
    }
}
