//! What stops a seeding run. The seeder's own: the pipeline's `Error` classes failures for its
//! consumer loop, which the seeder has none of; the messages are the same as there.

/// A failure of the database or of Redis (telling the read caches).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}
