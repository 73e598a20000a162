//! Configuration of the runner from the environment; every problem is reported at once.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    /// The API's internal listener, where modules and documents are fetched.
    pub api_internal_url: Option<String>,
    /// Bearer required on `/v1/*` and presented to the API; without it every `/v1` call is 401.
    pub runner_token: Option<String>,
    /// Calls in flight per process (`APP_RUNNER_CONCURRENCY`, 8).
    pub concurrency: usize,
    /// Calls in flight per tenant (`APP_RUNNER_TENANT_CONCURRENCY`, 4).
    pub tenant_concurrency: usize,
    /// Compiled modules kept in memory (`RUNNER_MODULE_CACHE_ENTRIES`, 64).
    pub module_cache_entries: u64,
    /// Where compiled modules are kept across restarts (`RUNNER_MODULE_CACHE_DIR`; `off`
    /// disables it).
    pub module_cache_dir: Option<PathBuf>,
    /// What one compilation may use (`RUNNER_COMPILE_MEMORY_MIB`, 2048;
    /// `RUNNER_COMPILE_CPU_SECONDS`, 60).
    pub compile_limits: crate::compiler::Limits,
    pub shutdown_grace: Duration,
}

/// The configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {}", .0.join("; "))]
pub struct ConfigError(Vec<String>);

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parsed<T: FromStr>(problems: &mut Vec<String>, name: &str, default: T) -> T {
    match var(name) {
        None => default,
        Some(text) => text.trim().parse().unwrap_or_else(|_| {
            problems.push(format!("{name}={text:?} is not valid"));
            default
        }),
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        let host: IpAddr = parsed(&mut problems, "RUNNER_HOST", IpAddr::from([0, 0, 0, 0]));
        let port: u16 = parsed(&mut problems, "RUNNER_PORT", 8090);
        let concurrency: usize = parsed(&mut problems, "APP_RUNNER_CONCURRENCY", 8);
        let tenant_concurrency: usize = parsed(&mut problems, "APP_RUNNER_TENANT_CONCURRENCY", 4);
        if concurrency == 0 || tenant_concurrency == 0 {
            problems.push(
                "APP_RUNNER_CONCURRENCY and APP_RUNNER_TENANT_CONCURRENCY must be at least 1"
                    .into(),
            );
        }
        let module_cache_entries = parsed(&mut problems, "RUNNER_MODULE_CACHE_ENTRIES", 64u64);
        let module_cache_dir = match var("RUNNER_MODULE_CACHE_DIR") {
            Some(off) if off == "off" => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => Some(std::env::temp_dir().join("apps-runner-modules")),
        };
        let compile_limits = crate::compiler::Limits {
            memory_mib: parsed(&mut problems, "RUNNER_COMPILE_MEMORY_MIB", 2048),
            cpu_seconds: parsed(&mut problems, "RUNNER_COMPILE_CPU_SECONDS", 60),
        };
        if compile_limits.memory_mib < 256 || compile_limits.cpu_seconds == 0 {
            problems.push(
                "RUNNER_COMPILE_MEMORY_MIB must be at least 256 and RUNNER_COMPILE_CPU_SECONDS at least 1"
                    .into(),
            );
        }
        let grace = parsed(&mut problems, "SHUTDOWN_GRACE_SECONDS", 30u64);
        if !problems.is_empty() {
            return Err(ConfigError(problems));
        }
        Ok(Self {
            addr: SocketAddr::new(host, port),
            api_internal_url: var("API_INTERNAL_URL"),
            runner_token: var("APP_RUNNER_TOKEN"),
            concurrency,
            tenant_concurrency,
            module_cache_entries,
            module_cache_dir,
            compile_limits,
            shutdown_grace: Duration::from_secs(grace),
        })
    }
}
