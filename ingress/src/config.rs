//! Configuration from the environment, validated at start-up: every problem is reported at once
//! and the process refuses to start rather than run half-configured.

use std::net::IpAddr;
use std::time::Duration;

use crate::auth::{Algorithm, AuthConfig};

/// Object storage settings (`STORAGE_*`).
#[derive(Clone)]
pub struct StorageConfig {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// Everything the API needs to run.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: IpAddr,
    pub port: u16,
    pub internal_host: IpAddr,
    pub internal_port: u16,
    pub auth: AuthConfig,
    pub rate_limit_per_minute: u32,
    pub database_url: String,
    pub database_pool_size: u32,
    pub redis_url: String,
    pub kafka_brokers: String,
    pub storage: Option<StorageConfig>,
    pub runner_token: Option<String>,
    pub shutdown_grace: Duration,
}

/// The configuration could not be read; lists every problem.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n  - {}", .0.join("\n  - "))]
pub struct ConfigError(pub Vec<String>);

/// Reads variables and collects problems.
struct Env {
    problems: Vec<String>,
}

impl Env {
    fn text(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }

    fn required(&mut self, name: &str) -> String {
        self.text(name).unwrap_or_else(|| {
            self.problems.push(format!("{name} is required"));
            String::new()
        })
    }

    fn parsed<T: std::str::FromStr>(&mut self, name: &str, default: T) -> T {
        match self.text(name) {
            None => default,
            Some(raw) => raw.trim().parse().unwrap_or_else(|_| {
                self.problems.push(format!("{name}={raw:?} is not valid"));
                default
            }),
        }
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut env = Env {
            problems: Vec::new(),
        };
        let host = env.parsed("API_HOST", IpAddr::from([0, 0, 0, 0]));
        let port = env.parsed("API_PORT", 8080u16);
        let internal_host = env.parsed("API_INTERNAL_HOST", host);
        let internal_port = env.parsed("API_INTERNAL_PORT", 8081u16);
        if port == internal_port && port != 0 {
            env.problems
                .push("API_PORT and API_INTERNAL_PORT must differ".into());
        }
        let auth = auth_config(&mut env);
        let rate_limit_per_minute = env.parsed("API_RATE_LIMIT_PER_MINUTE", 600u32);
        let database_url = env.required("DATABASE_URL");
        let database_pool_size = env.parsed("DATABASE_POOL_SIZE", 16u32);
        let redis_url = env.required("REDIS_URL");
        let kafka_brokers = env.required("KAFKA_BROKERS");
        let storage = env.text("STORAGE_ENDPOINT").map(|endpoint| StorageConfig {
            endpoint,
            bucket: env
                .text("STORAGE_BUCKET")
                .unwrap_or_else(|| "app-modules".into()),
            region: env
                .text("STORAGE_REGION")
                .unwrap_or_else(|| "us-east-1".into()),
            access_key: env.text("STORAGE_ACCESS_KEY").unwrap_or_default(),
            secret_key: env.text("STORAGE_SECRET_KEY").unwrap_or_default(),
        });
        let runner_token = env.text("APP_RUNNER_TOKEN");
        let shutdown_grace = Duration::from_secs(env.parsed("SHUTDOWN_GRACE_SECONDS", 30u64));
        if env.problems.is_empty() {
            Ok(Self {
                host,
                port,
                internal_host,
                internal_port,
                auth,
                rate_limit_per_minute,
                database_url,
                database_pool_size,
                redis_url,
                kafka_brokers,
                storage,
                runner_token,
                shutdown_grace,
            })
        } else {
            Err(ConfigError(env.problems))
        }
    }
}

fn auth_config(env: &mut Env) -> AuthConfig {
    let algorithm = match env.text("JWT_ALGORITHM") {
        None => Algorithm::Hs256,
        Some(raw) => Algorithm::parse(&raw).unwrap_or_else(|| {
            env.problems.push(format!(
                "JWT_ALGORITHM={raw:?} is not one of HS256, RS256, ES256"
            ));
            Algorithm::Hs256
        }),
    };
    let key = match algorithm {
        Algorithm::Hs256 => env.required("JWT_SECRET").into_bytes(),
        Algorithm::Rs256 | Algorithm::Es256 => public_key(env),
    };
    AuthConfig {
        algorithm,
        key,
        issuer: env.text("JWT_ISSUER"),
        audience: env.text("JWT_AUDIENCE"),
        leeway_seconds: env.parsed("JWT_LEEWAY_SECONDS", 30u64),
    }
}

/// `JWT_PUBLIC_KEY` (PEM text) or `JWT_PUBLIC_KEY_FILE` (path to a PEM file).
fn public_key(env: &mut Env) -> Vec<u8> {
    if let Some(pem) = env.text("JWT_PUBLIC_KEY") {
        return pem.replace("\\n", "\n").into_bytes();
    }
    match env.text("JWT_PUBLIC_KEY_FILE") {
        Some(path) => std::fs::read(&path).unwrap_or_else(|e| {
            env.problems
                .push(format!("JWT_PUBLIC_KEY_FILE={path:?} cannot be read: {e}"));
            Vec::new()
        }),
        None => {
            env.problems
                .push("JWT_PUBLIC_KEY or JWT_PUBLIC_KEY_FILE is required for RS256/ES256".into());
            Vec::new()
        }
    }
}
