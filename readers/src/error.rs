/// Errors of the read path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Postgres did not answer in time or refused a connection: the caller may retry.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// Any other database failure.
    #[error("database query failed: {0}")]
    Database(#[source] sqlx::Error),
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
                Error::Unavailable(error)
            }
            other => Error::Database(other),
        }
    }
}

impl Error {
    /// Whether the same read may succeed if retried.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}
