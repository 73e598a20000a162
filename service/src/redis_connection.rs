//! The one way the services open a long-lived Redis connection. Everything they ask of Redis
//! has a durable fallback (a reply is in the inbox, an event claim in the database's unique key,
//! a history change in the next read), so a Redis that is away must cost a request a failure at
//! once, not a wait: the client library's default reconnects six times with backoff (6.3 s)
//! while every request waits on it, which stalled a stage's batches behind its reply publish
//! and held vendor webhooks 13 s (`loadtests/faults/postgres-redis`). Here a connection attempt
//! or an answer gets [`TIMEOUT`], a reconnect one retry, and a later request starts the next.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How long connecting, or an answer, may take.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// A connection manager to `client` that fails fast while Redis is away and reconnects when
/// asked again.
pub async fn manager(client: redis::Client) -> redis::RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(100))
        .set_max_delay(TIMEOUT);
    ConnectionManager::new_with_config(client, config).await
}
