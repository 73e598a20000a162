//! The pool options every service's Postgres pool starts from. sqlx pings a connection on its
//! way back to the pool, and by default on its way out again: a third round trip for every
//! query, which Postgres and the caller both pay. Here a connection is pinged on its way out
//! only after it sat idle for [`IDLE_BEFORE_PING`]: a busy pool's connections were proven a
//! moment ago, while one idle for long may have died quietly (a half-open TCP connection after
//! a network change would otherwise hang its first query until the kernel gave up on it).

use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::PgPoolOptions;

/// How long a connection may sit idle in the pool and still be used without a ping first.
pub const IDLE_BEFORE_PING: Duration = Duration::from_secs(30);

/// Pool options that ping only connections idle for [`IDLE_BEFORE_PING`] or more before use.
pub fn options() -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= IDLE_BEFORE_PING {
                    connection.ping().await?;
                }
                Ok(true)
            })
        })
}
