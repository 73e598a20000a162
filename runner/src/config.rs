//! The runner's configuration, read from the environment at start-up (README "Configuration").

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use service::config::Env;

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) addr: SocketAddr,
    /// The API's internal listener, where modules and documents are fetched.
    pub(crate) api_internal_url: Option<String>,
    /// Bearer required on `/v1/*` and presented to the API; without it every `/v1` call is 401.
    pub(crate) runner_token: Option<String>,
    /// Calls in flight per process (`APP_RUNNER_CONCURRENCY`).
    pub(crate) concurrency: usize,
    /// Calls in flight per tenant (`APP_RUNNER_TENANT_CONCURRENCY`).
    pub(crate) tenant_concurrency: usize,
    /// Compiled modules kept in memory (`RUNNER_MODULE_CACHE_ENTRIES`).
    pub(crate) module_cache_entries: u64,
    /// Where compiled modules are kept across restarts (`RUNNER_MODULE_CACHE_DIR`; `off`
    /// disables it).
    pub(crate) module_cache_dir: Option<PathBuf>,
    /// What one compilation may use (`RUNNER_COMPILE_MEMORY_MIB`, `RUNNER_COMPILE_CPU_SECONDS`).
    pub(crate) compile_limits: crate::compiler::Limits,
    pub(crate) shutdown_grace: Duration,
}

/// `RUNNER_MODULE_CACHE_DIR` when unset: under the system's temporary directory.
const DEFAULT_CACHE_DIR: &str = "$TMPDIR/apps-runner-modules";

impl Config {
    pub(crate) fn read(env: &mut Env) -> Self {
        let host = env.parsed("RUNNER_HOST", IpAddr::from([0, 0, 0, 0]));
        let port = env.parsed("RUNNER_PORT", 8090u16);
        let concurrency: usize = env.parsed("APP_RUNNER_CONCURRENCY", 8);
        let tenant_concurrency: usize = env.parsed("APP_RUNNER_TENANT_CONCURRENCY", 4);
        if concurrency == 0 || tenant_concurrency == 0 {
            env.problem(
                "APP_RUNNER_CONCURRENCY and APP_RUNNER_TENANT_CONCURRENCY must be at least 1",
            );
        }
        let module_cache_entries = env.parsed("RUNNER_MODULE_CACHE_ENTRIES", 64u64);
        let module_cache_dir = match env.text_or("RUNNER_MODULE_CACHE_DIR", DEFAULT_CACHE_DIR) {
            off if off == "off" => None,
            dir if dir == DEFAULT_CACHE_DIR => {
                Some(std::env::temp_dir().join("apps-runner-modules"))
            }
            dir => Some(PathBuf::from(dir)),
        };
        let compile_limits = crate::compiler::Limits {
            memory_mib: env.parsed("RUNNER_COMPILE_MEMORY_MIB", 2048),
            cpu_seconds: env.parsed("RUNNER_COMPILE_CPU_SECONDS", 60),
        };
        if compile_limits.memory_mib < 256 || compile_limits.cpu_seconds == 0 {
            env.problem(
                "RUNNER_COMPILE_MEMORY_MIB must be at least 256 and RUNNER_COMPILE_CPU_SECONDS at least 1",
            );
        }
        let grace = env.parsed("SHUTDOWN_GRACE_SECONDS", 30u64);
        Self {
            addr: SocketAddr::new(host, port),
            api_internal_url: env.text("API_INTERNAL_URL"),
            runner_token: env.text("APP_RUNNER_TOKEN"),
            concurrency,
            tenant_concurrency,
            module_cache_entries,
            module_cache_dir,
            compile_limits,
            shutdown_grace: Duration::from_secs(grace),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README's configuration table and this reader agree on every variable and default.
    #[test]
    fn readme_documents_every_variable() {
        service::testing::assert_readme_documents(
            include_str!("../../README.md"),
            "runner",
            |env| {
                let _ = Config::read(env);
            },
        );
    }
}
