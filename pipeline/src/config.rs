//! Configuration of the pipeline from the environment.

use std::net::{IpAddr, SocketAddr};

use crate::Error;

#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: String,
    pub database_pool_size: u32,
    pub redis_url: String,
    pub kafka_brokers: String,
    /// `/health`, `/health/ready`, `/healthz`, `/metrics` (`WORKER_HEALTH_HOST`/`_PORT`).
    pub health_addr: SocketAddr,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Config {
    pub fn from_env() -> Result<Self, Error> {
        let mut problems = Vec::new();
        let mut required = |name: &str| {
            var(name).unwrap_or_else(|| {
                problems.push(format!("{name} is required"));
                String::new()
            })
        };
        let database_url = required("DATABASE_URL");
        let redis_url = required("REDIS_URL");
        let kafka_brokers = required("KAFKA_BROKERS");
        let host: IpAddr = match var("WORKER_HEALTH_HOST").map(|h| h.parse()) {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(Ok(host)) => host,
            Some(Err(_)) => {
                problems.push("WORKER_HEALTH_HOST is not an IP address".into());
                IpAddr::from([0, 0, 0, 0])
            }
        };
        let port: u16 = match var("WORKER_HEALTH_PORT").map(|p| p.parse()) {
            None => 8082,
            Some(Ok(port)) => port,
            Some(Err(_)) => {
                problems.push("WORKER_HEALTH_PORT is not a port".into());
                8082
            }
        };
        let database_pool_size = match var("DATABASE_POOL_SIZE").map(|n| n.parse()) {
            None => 10,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                problems.push("DATABASE_POOL_SIZE is not a number".into());
                10
            }
        };
        if !problems.is_empty() {
            return Err(Error::Config(problems.join("; ")));
        }
        Ok(Self {
            database_url,
            database_pool_size,
            redis_url,
            kafka_brokers,
            health_addr: SocketAddr::new(host, port),
        })
    }
}
