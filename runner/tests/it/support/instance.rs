//! A runner started through `./stack run runner` with its own port, upstream and settings;
//! stopped (SIGTERM) when dropped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{RUNNER_TOKEN, repo_root};

pub struct Runner {
    child: Child,
    pub port: u16,
    /// The module cache directory made for this runner (none when the test gave its own).
    _cache: Option<tempfile::TempDir>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
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
        let port = free_port();
        let mut command = Command::new(repo_root().join("stack"));
        command
            .arg("run")
            .arg("runner")
            .env("RUNNER_HOST", "127.0.0.1")
            .env("RUNNER_PORT", port.to_string())
            .env("API_INTERNAL_URL", upstream_url)
            .env("APP_RUNNER_TOKEN", RUNNER_TOKEN)
            .env("RUNNER_MODULE_CACHE_DIR", cache_dir)
            .env("LOG_LEVEL", "warn")
            .stdout(match log {
                Some(path) => Stdio::from(std::fs::File::create(path).expect("log file")),
                None => Stdio::null(),
            })
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().expect("./stack run runner starts");
        let runner = Self {
            child,
            port,
            _cache: cache,
        };
        runner.wait_until_live().await;
        runner
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn wait_until_live(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        while Instant::now() < deadline {
            if let Ok(r) = http.get(self.url("/health")).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("runner on port {} did not come up", self.port);
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

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
