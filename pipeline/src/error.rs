//! Errors of the pipeline, each with a retry class: what the consumer loop does with the message.

use topics::HandleError;

/// What a failure means for the message being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// A dependency failed: retry the same message.
    Retryable,
    /// The message can never apply: dead-letter it and move on.
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
    #[error("configuration: {0}")]
    Config(String),
    #[error("migrations: {0}")]
    Migrate(#[from] schema::Error),
}

impl Error {
    pub fn class(&self) -> RetryClass {
        match self {
            Error::Database(e) => database_class(e),
            Error::Broker(_) | Error::Redis(_) => RetryClass::Retryable,
            Error::Undecodable(_) | Error::Invalid(_) => RetryClass::Poison,
            Error::Config(_) | Error::Migrate(_) => RetryClass::Fatal,
        }
    }

    /// The consumer loop's view of this error.
    pub fn into_handle_error(self) -> HandleError {
        let text = self.to_string();
        match self.class() {
            RetryClass::Retryable => HandleError::Retryable(text),
            RetryClass::Poison => HandleError::Poison(text),
            RetryClass::Fatal => HandleError::Fatal(text),
        }
    }
}

/// Connection and concurrency failures pass; a constraint our own SQL violates will not.
fn database_class(error: &sqlx::Error) -> RetryClass {
    match error {
        sqlx::Error::Database(db) => match db.code().as_deref() {
            // serialization_failure, deadlock_detected, unique_violation (a concurrent apply of
            // the same command: the retry finds it in the inbox)
            Some("40001" | "40P01" | "23505") => RetryClass::Retryable,
            // Connection exceptions, operator intervention, insufficient resources
            Some(code)
                if code.starts_with("08") || code.starts_with("57") || code.starts_with("53") =>
            {
                RetryClass::Retryable
            }
            _ => RetryClass::Poison,
        },
        _ => RetryClass::Retryable,
    }
}
