//! The API's configuration, read from the environment at start-up (README "Configuration").

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use schema::module::Sha256;
use service::config::Env;
use topics::call_token::CallTokenKey;
use topics::sealed::SecretKeys;

use crate::auth::{Algorithm, AuthConfig};
use crate::client_address::TrustedProxies;

pub use service::storage::StorageConfig;

/// Everything the API needs to run.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) host: IpAddr,
    pub(crate) port: u16,
    pub(crate) internal_host: IpAddr,
    pub(crate) internal_port: u16,
    pub(crate) auth: AuthConfig,
    pub(crate) rate_limit_per_minute: u32,
    pub(crate) database_url: String,
    pub(crate) database_pool_size: u32,
    pub(crate) redis_url: String,
    pub(crate) kafka: topics::Cluster,
    pub(crate) storage: Option<StorageConfig>,
    pub(crate) runner_token: Option<String>,
    /// The runner's `/v1/*` address (`APP_RUNNER_URL`); without it `/apps` answers 503.
    pub(crate) runner_url: Option<String>,
    /// `SECRET_STORE_KEY` and `SECRET_STORE_PREVIOUS_KEYS`; without them the secret routes
    /// answer 503.
    pub(crate) secret_keys: Option<Arc<SecretKeys>>,
    /// `APP_BLOCKED_SHA256`: modules the operator blocked.
    pub(crate) blocked_modules: Vec<Sha256>,
    /// `APP_CALL_TOKEN_SECRET`: verifies the call tokens the runner presents for documents
    /// (and signs those of test calls); without it every document fetch answers 401.
    pub(crate) call_tokens: Option<Arc<CallTokenKey>>,
    /// `APP_CATALOGUE_DIR`: the release's platform modules, published at start-up.
    pub(crate) catalogue_dir: Option<PathBuf>,
    /// How long a route waits for its command's outcome (`COMMAND_WAIT_SECONDS`).
    pub(crate) command_wait: Duration,
    /// `API_READ_CACHE_MB`: memory of the read cache; 0 turns it off.
    pub(crate) read_cache_bytes: u64,
    pub(crate) shutdown_grace: Duration,
    /// `API_TRUST_FORWARDED_FOR`: the proxies whose `x-forwarded-for` names the client.
    pub(crate) trusted_proxies: TrustedProxies,
    /// `WEBHOOK_PUBLIC_URL`: the public address vendors post webhooks to; modules get callback
    /// URLs built on it, and none without it.
    pub(crate) webhook_public_url: Option<String>,
    /// `WEBHOOK_MAX_IN_FLIGHT`: webhooks handled at once by this instance; beyond it the route
    /// answers 503 with `Retry-After` instead of queueing.
    pub(crate) webhook_max_in_flight: usize,
    /// `WEBHOOK_PRODUCE_LINGER_MS`: how long a webhook's event waits for others to share its
    /// produce request (the broker's cost is per request; see BENCHMARKS.md).
    pub(crate) webhook_produce_linger: Duration,
    /// `CONSOLE_URL`: the operators' console; activity items link into it (`href`), and carry
    /// `null` without it.
    pub(crate) console_url: Option<String>,
    /// `WEBHOOK_ENDPOINTS_ALLOW_LOOPBACK`: tenants' webhook endpoints may be on this machine
    /// (development only; the pipeline reads the same setting).
    pub(crate) endpoints_loopback: outbound::Loopback,
}

impl Config {
    pub(crate) fn read(env: &mut Env) -> Self {
        let host = env.parsed("API_HOST", IpAddr::from([0, 0, 0, 0]));
        let port = env.parsed("API_PORT", 8080u16);
        let internal_host = env.parsed_opt("API_INTERNAL_HOST").unwrap_or(host);
        let internal_port = env.parsed("API_INTERNAL_PORT", 8081u16);
        if port == internal_port && port != 0 {
            env.problem("API_PORT and API_INTERNAL_PORT must differ");
        }
        let auth = auth_config(env);
        let rate_limit_per_minute = env.parsed("API_RATE_LIMIT_PER_MINUTE", 600u32);
        let database_url = env.required("DATABASE_URL");
        let database_pool_size = env.parsed("DATABASE_POOL_SIZE", 16u32);
        let redis_url = env.required("REDIS_URL");
        let kafka = topics::Cluster::read(env);
        let storage = StorageConfig::read(env);
        let runner_token = env.text("APP_RUNNER_TOKEN");
        let runner_url = env.text("APP_RUNNER_URL");
        let secret_keys = secret_keys(env);
        let blocked_modules = blocked_modules(env);
        let call_tokens = call_tokens(env);
        let catalogue_dir = env.text("APP_CATALOGUE_DIR").map(PathBuf::from);
        let command_wait = Duration::from_secs(env.parsed("COMMAND_WAIT_SECONDS", 10u64));
        let read_cache_bytes = env.parsed("API_READ_CACHE_MB", 64u64) * 1024 * 1024;
        let shutdown_grace = Duration::from_secs(env.parsed("SHUTDOWN_GRACE_SECONDS", 30u64));
        let trusted_proxies = trusted_proxies(env);
        let webhook_public_url = env
            .text("WEBHOOK_PUBLIC_URL")
            .map(|url| url.trim_end_matches('/').to_owned());
        let webhook_max_in_flight = env.parsed("WEBHOOK_MAX_IN_FLIGHT", 256usize).max(1);
        let webhook_produce_linger =
            Duration::from_millis(env.parsed("WEBHOOK_PRODUCE_LINGER_MS", 20u64));
        let console_url = env
            .text("CONSOLE_URL")
            .map(|url| url.trim_end_matches('/').to_owned());
        let endpoints_loopback = if env.parsed("WEBHOOK_ENDPOINTS_ALLOW_LOOPBACK", false) {
            outbound::Loopback::Allowed
        } else {
            outbound::Loopback::Refused
        };
        Self {
            host,
            port,
            internal_host,
            internal_port,
            auth,
            rate_limit_per_minute,
            database_url,
            database_pool_size,
            redis_url,
            kafka,
            storage,
            runner_token,
            runner_url,
            secret_keys,
            blocked_modules,
            call_tokens,
            catalogue_dir,
            command_wait,
            read_cache_bytes,
            shutdown_grace,
            trusted_proxies,
            webhook_public_url,
            webhook_max_in_flight,
            webhook_produce_linger,
            console_url,
            endpoints_loopback,
        }
    }
}

/// `SECRET_STORE_KEY` (32 bytes, base64) seals; each of `SECRET_STORE_PREVIOUS_KEYS`
/// (comma-separated) still opens what it sealed.
fn secret_keys(env: &mut Env) -> Option<Arc<SecretKeys>> {
    let current = env.text("SECRET_STORE_KEY");
    let previous = env.text("SECRET_STORE_PREVIOUS_KEYS");
    let key = SecretKeys::configured(current.as_deref(), previous.as_deref());
    env.checked(key).map(Arc::new)
}

/// `API_TRUST_FORWARDED_FOR`: comma-separated proxy addresses or CIDR ranges.
fn trusted_proxies(env: &mut Env) -> TrustedProxies {
    let raw = env.text("API_TRUST_FORWARDED_FOR").unwrap_or_default();
    TrustedProxies::parse(&raw).unwrap_or_else(|problem| {
        env.problem(format!("API_TRUST_FORWARDED_FOR: {problem}"));
        TrustedProxies::default()
    })
}

/// `APP_CALL_TOKEN_SECRET`, at least 32 bytes.
fn call_tokens(env: &mut Env) -> Option<Arc<CallTokenKey>> {
    let secret = env.text("APP_CALL_TOKEN_SECRET");
    let key = CallTokenKey::configured(secret.as_deref());
    env.checked(key).map(Arc::new)
}

/// `APP_BLOCKED_SHA256`: comma-separated module hashes.
fn blocked_modules(env: &mut Env) -> Vec<Sha256> {
    let raw = env.text("APP_BLOCKED_SHA256").unwrap_or_default();
    Sha256::parse_list(&raw).unwrap_or_else(|problem| {
        env.problem(format!("APP_BLOCKED_SHA256: {problem}"));
        Vec::new()
    })
}

fn auth_config(env: &mut Env) -> AuthConfig {
    let raw = env.text_or("JWT_ALGORITHM", "HS256");
    let algorithm = Algorithm::parse(&raw).unwrap_or_else(|| {
        env.problem(format!(
            "JWT_ALGORITHM={raw:?} is not one of HS256, RS256, ES256"
        ));
        Algorithm::Hs256
    });
    let secret = env.text("JWT_SECRET");
    let pem = env.text("JWT_PUBLIC_KEY");
    let pem_file = env.text("JWT_PUBLIC_KEY_FILE");
    let key = match algorithm {
        Algorithm::Hs256 => secret
            .unwrap_or_else(|| {
                env.problem("JWT_SECRET is required for HS256");
                String::new()
            })
            .into_bytes(),
        Algorithm::Rs256 | Algorithm::Es256 => public_key(env, pem, pem_file),
    };
    AuthConfig {
        algorithm,
        key,
        issuer: env.text("JWT_ISSUER"),
        audience: env.text("JWT_AUDIENCE"),
        leeway_seconds: env.parsed("JWT_LEEWAY_SECONDS", 30u64),
    }
}

/// `JWT_PUBLIC_KEY` (PEM text, `\n` escapes allowed) or `JWT_PUBLIC_KEY_FILE` (a PEM file).
fn public_key(env: &mut Env, pem: Option<String>, file: Option<String>) -> Vec<u8> {
    if let Some(pem) = pem {
        return pem.replace("\\n", "\n").into_bytes();
    }
    match file {
        Some(path) => std::fs::read(&path).unwrap_or_else(|e| {
            env.problem(format!("JWT_PUBLIC_KEY_FILE={path:?} cannot be read: {e}"));
            Vec::new()
        }),
        None => {
            env.problem("JWT_PUBLIC_KEY or JWT_PUBLIC_KEY_FILE is required for RS256/ES256");
            Vec::new()
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
            "ingress",
            |env| {
                let _ = Config::read(env);
            },
        );
    }
}
