//! The pipeline's configuration, read from the environment at start-up (README
//! "Configuration").

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use schema::module::Sha256;
use service::config::Env;
use topics::call_token::CallTokenKey;
use topics::sealed::SecretKeys;

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) database_url: String,
    pub(crate) database_pool_size: u32,
    pub(crate) redis_url: String,
    pub(crate) kafka: topics::Cluster,
    /// `KAFKA_GROUP_INSTANCE_ID`: this worker's static name in its stages' consumer groups
    /// ([`topics::ConsumerOptions::instance_id`]); unset, it joins as a new member each start.
    pub(crate) group_instance_id: Option<String>,
    /// `/health`, `/health/ready`, `/healthz`, `/metrics` (`WORKER_HEALTH_HOST`/`_PORT`).
    pub(crate) health_addr: SocketAddr,
    /// The runner's `/v1/*` address and bearer (`APP_RUNNER_URL`, `APP_RUNNER_TOKEN`): without
    /// them the app calls of runs fail as the runner being away.
    pub(crate) runner: Option<(String, String)>,
    /// `SECRET_STORE_KEY` and `SECRET_STORE_PREVIOUS_KEYS`, to open an install's secrets for a
    /// call; without them a call of an app with secrets fails.
    pub(crate) secret_keys: Option<Arc<SecretKeys>>,
    /// `APP_BLOCKED_SHA256`: modules no call runs.
    pub(crate) blocked_modules: Vec<Sha256>,
    /// `APP_CALL_TOKEN_SECRET`: signs the call token of each call of an app that needs
    /// documents; without it those calls go without one, and their modules read no documents.
    pub(crate) call_tokens: Option<Arc<CallTokenKey>>,
    /// `WEBHOOK_PUBLIC_URL`: the public address vendors post webhooks to; calls get callback
    /// URLs built on it, and none without it.
    pub(crate) webhook_public_url: Option<String>,
    /// `WEBHOOK_ENDPOINTS_ALLOW_LOOPBACK`: deliveries may go to this machine (development).
    pub(crate) endpoints_loopback: outbound::Loopback,
    /// `STORAGE_*`: where scheduled audit exports go; without it none starts.
    pub(crate) storage: Option<service::storage::StorageConfig>,
    /// `AUDIT_EXPORT_EVERY_SECONDS`: how often due export windows are looked for.
    pub(crate) audit_export_every: std::time::Duration,
    /// `BACKTEST_PACE_MS`: a pause after every hundred evaluations a backtest replays (0: none).
    pub(crate) backtest_pace: std::time::Duration,
}

impl Config {
    pub(crate) fn read(env: &mut Env) -> Self {
        let database_url = env.required("DATABASE_URL");
        let database_pool_size = env.parsed("DATABASE_POOL_SIZE", 10u32);
        let redis_url = env.required("REDIS_URL");
        let kafka = topics::Cluster::read(env);
        let group_instance_id = env.text("KAFKA_GROUP_INSTANCE_ID");
        let host = env.parsed("WORKER_HEALTH_HOST", IpAddr::from([0, 0, 0, 0]));
        let port = env.parsed("WORKER_HEALTH_PORT", 8082u16);
        let runner = env.text("APP_RUNNER_URL").zip(env.text("APP_RUNNER_TOKEN"));
        let secret_keys = secret_keys(env);
        let raw = env.text("APP_BLOCKED_SHA256").unwrap_or_default();
        let blocked_modules = Sha256::parse_list(&raw).unwrap_or_else(|problem| {
            env.problem(format!("APP_BLOCKED_SHA256: {problem}"));
            Vec::new()
        });
        let call_tokens = call_tokens(env);
        let webhook_public_url = env
            .text("WEBHOOK_PUBLIC_URL")
            .map(|url| url.trim_end_matches('/').to_owned());
        let endpoints_loopback = if env.parsed("WEBHOOK_ENDPOINTS_ALLOW_LOOPBACK", false) {
            outbound::Loopback::Allowed
        } else {
            outbound::Loopback::Refused
        };
        let storage = service::storage::StorageConfig::read(env);
        let audit_export_every =
            std::time::Duration::from_secs(env.parsed("AUDIT_EXPORT_EVERY_SECONDS", 60u64).max(1));
        let backtest_pace = std::time::Duration::from_millis(env.parsed("BACKTEST_PACE_MS", 0u64));
        Self {
            database_url,
            database_pool_size,
            redis_url,
            kafka,
            group_instance_id,
            health_addr: SocketAddr::new(host, port),
            runner,
            secret_keys,
            blocked_modules,
            call_tokens,
            webhook_public_url,
            endpoints_loopback,
            storage,
            audit_export_every,
            backtest_pace,
        }
    }
}

/// `APP_CALL_TOKEN_SECRET`, at least 32 bytes.
fn call_tokens(env: &mut Env) -> Option<Arc<CallTokenKey>> {
    let secret = env.text("APP_CALL_TOKEN_SECRET");
    let key = CallTokenKey::configured(secret.as_deref());
    env.checked(key).map(Arc::new)
}

fn secret_keys(env: &mut Env) -> Option<Arc<SecretKeys>> {
    let current = env.text("SECRET_STORE_KEY");
    let previous = env.text("SECRET_STORE_PREVIOUS_KEYS");
    let key = SecretKeys::configured(current.as_deref(), previous.as_deref());
    env.checked(key).map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README's configuration table and this reader agree on every variable and default.
    #[test]
    fn readme_documents_every_variable() {
        service::testing::assert_readme_documents(
            include_str!("../../README.md"),
            "pipeline",
            |env| {
                let _ = Config::read(env);
            },
        );
    }
}
