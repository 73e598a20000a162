//! Configuration of the runner from the environment.

use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    /// The API's internal listener, where modules and documents are fetched.
    pub api_internal_url: Option<String>,
}

/// The configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(String);

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let host: IpAddr = var("RUNNER_HOST")
            .map(|h| {
                h.parse()
                    .map_err(|_| ConfigError(format!("RUNNER_HOST={h:?} is not an IP address")))
            })
            .transpose()?
            .unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let port: u16 = var("RUNNER_PORT")
            .map(|p| {
                p.parse()
                    .map_err(|_| ConfigError(format!("RUNNER_PORT={p:?} is not a port")))
            })
            .transpose()?
            .unwrap_or(8090);
        Ok(Self {
            addr: SocketAddr::new(host, port),
            api_internal_url: var("API_INTERNAL_URL"),
        })
    }
}
