//! Every failure the API answers, and the one exhaustive mapping from failure to status, code,
//! message, details and headers (SPEC §2.1, §7). Handlers return [`Error`];
//! `service::http::response::error` writes its envelope.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::{Value, json};
use service::health::NotReady;
use service::http::HttpError;

/// Where a validation issue was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Location {
    Query,
    Path,
    Body,
}

/// One reason a request is invalid (`details.issues[]` of `validation_error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Issue {
    #[serde(rename = "in")]
    pub(crate) location: Location,
    /// Parameter name, or JSON Pointer into the body (`""` for the whole body).
    pub(crate) path: String,
    pub(crate) message: String,
}

impl Issue {
    pub(crate) fn new(
        location: Location,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            location,
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Why a bearer token was refused. Never shown to the caller beyond a generic message: the
/// reason goes to the log line, so forged tokens teach an attacker nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    Missing,
    NotBearer,
    Invalid,
    Expired,
    NotYetValid,
    BadClaims,
}

impl AuthFailure {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::NotBearer => "not_bearer",
            AuthFailure::Invalid => "invalid",
            AuthFailure::Expired => "expired",
            AuthFailure::NotYetValid => "not_yet_valid",
            AuthFailure::BadClaims => "bad_claims",
        }
    }
}

impl From<service::http::bearer::NoBearer> for AuthFailure {
    fn from(no_bearer: service::http::bearer::NoBearer) -> Self {
        match no_bearer {
            service::http::bearer::NoBearer::Missing => AuthFailure::Missing,
            service::http::bearer::NoBearer::NotBearer => AuthFailure::NotBearer,
        }
    }
}

/// Failures of the API.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: String },
    #[error("payload too large")]
    PayloadTooLarge { limit: usize },
    #[error("validation failed")]
    Validation(Vec<Issue>),
    #[error("unauthorized: {}", .0.as_str())]
    Unauthorized(AuthFailure),
    #[error("forbidden: needs {permission}")]
    Forbidden { permission: &'static str },
    #[error("rate limited")]
    RateLimited { retry_after_seconds: u64 },
    #[error("not ready")]
    NotReady(NotReady),
    #[error("service unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn validation(
        location: Location,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Validation(vec![Issue::new(location, path, message)])
    }

    /// Whether the failure is the server's (logged at error level, counted as 5xx).
    pub(crate) fn is_server_fault(&self) -> bool {
        self.status().is_server_error()
    }
}

impl HttpError for Error {
    fn status(&self) -> StatusCode {
        match self {
            Error::NotFound => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Error::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::Validation(_) => StatusCode::BAD_REQUEST,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden { .. } => StatusCode::FORBIDDEN,
            Error::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::NotReady(_) | Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Error::NotFound => "not_found",
            Error::MethodNotAllowed { .. } => "method_not_allowed",
            Error::PayloadTooLarge { .. } => "payload_too_large",
            Error::Validation(_) => "validation_error",
            Error::Unauthorized(_) => "unauthorized",
            Error::Forbidden { .. } => "forbidden",
            Error::RateLimited { .. } => "rate_limited",
            Error::NotReady(not_ready) => not_ready.code(),
            Error::Unavailable(_) => "unavailable",
            Error::Internal(_) => "internal",
        }
    }

    fn message(&self) -> Cow<'static, str> {
        match self {
            Error::NotFound => "Not found.".into(),
            Error::MethodNotAllowed { allow } => {
                format!("Method not allowed; allowed: {allow}.").into()
            }
            Error::PayloadTooLarge { limit } => format!("Body larger than {limit} bytes.").into(),
            Error::Validation(_) => "The request is invalid.".into(),
            Error::Unauthorized(_) => "A valid bearer token is required.".into(),
            Error::Forbidden { permission } => format!("Missing permission {permission}.").into(),
            Error::RateLimited {
                retry_after_seconds,
            } => format!("Rate limit exceeded; retry in {retry_after_seconds} s.").into(),
            Error::NotReady(not_ready) => not_ready.message(),
            Error::Unavailable(_) => "A dependency is unavailable; retry later.".into(),
            Error::Internal(_) => "Internal error.".into(),
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            Error::Validation(issues) => Some(json!({ "issues": issues })),
            Error::RateLimited {
                retry_after_seconds,
            } => Some(json!({ "retryAfterSeconds": retry_after_seconds })),
            Error::PayloadTooLarge { limit } => Some(json!({ "limitBytes": limit })),
            Error::Forbidden { permission } => Some(json!({ "permission": permission })),
            Error::NotReady(not_ready) => not_ready.details(),
            Error::NotFound
            | Error::MethodNotAllowed { .. }
            | Error::Unauthorized(_)
            | Error::Unavailable(_)
            | Error::Internal(_) => None,
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        match self {
            Error::MethodNotAllowed { allow } => {
                if let Ok(value) = HeaderValue::from_str(allow) {
                    headers.insert(http::header::ALLOW, value);
                }
            }
            Error::RateLimited {
                retry_after_seconds,
            } => {
                headers.insert(
                    http::header::RETRY_AFTER,
                    HeaderValue::from(*retry_after_seconds),
                );
            }
            Error::Unauthorized(_) => {
                headers.insert(
                    http::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer"),
                );
            }
            _ => {}
        }
    }
}

impl From<readers::Error> for Error {
    fn from(error: readers::Error) -> Self {
        if error.is_retryable() {
            Error::Unavailable(error.to_string())
        } else {
            Error::Internal(error.to_string())
        }
    }
}
