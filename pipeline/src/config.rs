//! The pipeline's configuration, read from the environment at start-up (README
//! "Configuration").

use std::net::{IpAddr, SocketAddr};

use service::config::Env;

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) database_url: String,
    pub(crate) database_pool_size: u32,
    pub(crate) redis_url: String,
    pub(crate) kafka_brokers: String,
    /// `/health`, `/health/ready`, `/healthz`, `/metrics` (`WORKER_HEALTH_HOST`/`_PORT`).
    pub(crate) health_addr: SocketAddr,
}

impl Config {
    pub(crate) fn read(env: &mut Env) -> Self {
        let database_url = env.required("DATABASE_URL");
        let database_pool_size = env.parsed("DATABASE_POOL_SIZE", 10u32);
        let redis_url = env.required("REDIS_URL");
        let kafka_brokers = env.required("KAFKA_BROKERS");
        let host = env.parsed("WORKER_HEALTH_HOST", IpAddr::from([0, 0, 0, 0]));
        let port = env.parsed("WORKER_HEALTH_PORT", 8082u16);
        Self {
            database_url,
            database_pool_size,
            redis_url,
            kafka_brokers,
            health_addr: SocketAddr::new(host, port),
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
            "pipeline",
            |env| {
                let _ = Config::read(env);
            },
        );
    }
}
