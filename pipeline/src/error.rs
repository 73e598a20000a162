//! Errors of the pipeline, each with the class that says what the consumer loop does with the
//! message being applied (`topics::HandleError`). Classified by type, never by message text.

use topics::HandleError;

/// What a failure means for the message being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// Applying failed in a way another attempt may fix: retried a bounded number of times.
    Retryable,
    /// A dependency did not answer: retried until it is back.
    Unavailable,
    /// The message can never apply: dead-lettered at once.
    Poison,
    /// The process cannot continue.
    Fatal,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("broker: {0}")]
    Broker(#[from] topics::Error),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("command does not decode: {0}")]
    Undecodable(String),
    #[error("command is invalid: {0}")]
    Invalid(String),
    #[error("migrations: {0}")]
    Migrate(#[from] schema::Error),
    #[error("read model: {0}")]
    Read(#[from] readers::Error),
    /// A stage broke its own contract (a programming error): no message could be applied.
    #[error("stage contract broken: {0}")]
    Contract(String),
    /// Another writer changed what a batch had read (a vendor event id recorded by another
    /// partition's writer between the read and the insert): applied again, the batch reads it.
    #[error("raced another writer: {0}")]
    Raced(String),
}

impl Error {
    pub fn class(&self) -> RetryClass {
        match self {
            Error::Database(e) => database_class(e),
            Error::Broker(_) | Error::Redis(_) => RetryClass::Unavailable,
            Error::Undecodable(_) | Error::Invalid(_) => RetryClass::Poison,
            Error::Raced(_) => RetryClass::Retryable,
            Error::Migrate(_) | Error::Contract(_) => RetryClass::Fatal,
            Error::Read(e) if e.is_retryable() => RetryClass::Unavailable,
            Error::Read(readers::Error::Database(e) | readers::Error::Unavailable(e)) => {
                database_class(e)
            }
        }
    }

    /// The consumer loop's view of this error.
    pub fn into_handle_error(self) -> HandleError {
        let text = self.to_string();
        match self.class() {
            RetryClass::Retryable => HandleError::Retryable(text),
            RetryClass::Unavailable => HandleError::Unavailable(text),
            RetryClass::Poison => HandleError::Poison(text),
            RetryClass::Fatal => HandleError::Fatal(text),
        }
    }
}

/// A connection that failed is the database's state, not the command's: waited for. Conflicts
/// between transactions pass on a retry. Anything the command's own SQL runs into (a unique or
/// other constraint, a row that is not there) happens again on every attempt: a single writer
/// per key applies commands serially, and concurrent applies of one command are serialised by
/// its inbox row, so such an error is the command's and it is dead-lettered.
fn database_class(error: &sqlx::Error) -> RetryClass {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => RetryClass::Unavailable,
        sqlx::Error::Database(db) => match db.code().as_deref() {
            // serialization_failure, deadlock_detected, lock_not_available, query_canceled
            // (statement timeout)
            Some("40001" | "40P01" | "55P03" | "57014") => RetryClass::Retryable,
            // Connection exceptions, operator intervention (shutdown), insufficient resources
            Some(code)
                if code.starts_with("08") || code.starts_with("57") || code.starts_with("53") =>
            {
                RetryClass::Unavailable
            }
            _ => RetryClass::Poison,
        },
        sqlx::Error::Protocol(_) => RetryClass::Unavailable,
        _ => RetryClass::Poison,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_command_runs_into_is_poison_and_what_the_database_is_in_is_waited_for() {
        assert_eq!(
            database_class(&sqlx::Error::RowNotFound),
            RetryClass::Poison
        );
        assert_eq!(
            database_class(&sqlx::Error::PoolTimedOut),
            RetryClass::Unavailable
        );
        assert_eq!(
            database_class(&sqlx::Error::Io(std::io::Error::other("reset"))),
            RetryClass::Unavailable
        );
        assert_eq!(Error::Undecodable("x".into()).class(), RetryClass::Poison);
        assert!(matches!(
            Error::Database(sqlx::Error::PoolClosed).into_handle_error(),
            HandleError::Unavailable(_)
        ));
    }
}
