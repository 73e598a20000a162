//! Every failure the API answers, and the one exhaustive mapping from failure to status, code and
//! envelope (SPEC §2.1, §7). Handlers return [`Error`]; only [`crate::response`] renders it.

use http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};

/// Where a validation issue was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Query,
    Path,
    Header,
    Body,
}

/// One reason a request is invalid (`details.issues[]` of `validation_error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    #[serde(rename = "in")]
    pub location: Location,
    /// Parameter name, or JSON Pointer into the body (`""` for the whole body).
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn new(location: Location, path: impl Into<String>, message: impl Into<String>) -> Self {
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
pub enum AuthFailure {
    Missing,
    NotBearer,
    Invalid,
    Expired,
    NotYetValid,
    BadClaims,
}

impl AuthFailure {
    pub fn as_str(self) -> &'static str {
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

/// Failures of the API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: String },
    #[error("payload too large")]
    PayloadTooLarge { limit: usize },
    #[error("validation failed")]
    Validation(Vec<Issue>),
    #[error("unsupported media type")]
    UnsupportedMediaType { expected: &'static str },
    #[error("unauthorized: {}", .0.as_str())]
    Unauthorized(AuthFailure),
    #[error("forbidden: needs {permission}")]
    Forbidden { permission: &'static str },
    #[error("rate limited")]
    RateLimited { retry_after_seconds: u64 },
    #[error("not ready")]
    NotReady {
        unreachable: Vec<&'static str>,
        checks: Value,
    },
    #[error("service unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn validation(
        location: Location,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Validation(vec![Issue::new(location, path, message)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Error::NotFound => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Error::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::Validation(_) => StatusCode::BAD_REQUEST,
            Error::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden { .. } => StatusCode::FORBIDDEN,
            Error::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::NotReady { .. } | Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound => "not_found",
            Error::MethodNotAllowed { .. } => "method_not_allowed",
            Error::PayloadTooLarge { .. } => "payload_too_large",
            Error::Validation(_) => "validation_error",
            Error::UnsupportedMediaType { .. } => "unsupported_media_type",
            Error::Unauthorized(_) => "unauthorized",
            Error::Forbidden { .. } => "forbidden",
            Error::RateLimited { .. } => "rate_limited",
            Error::NotReady { .. } => "not_ready",
            Error::Unavailable(_) => "unavailable",
            Error::Internal(_) => "internal",
        }
    }

    /// The caller-facing message. Internal causes stay in the log.
    pub fn message(&self) -> String {
        match self {
            Error::NotFound => "Not found.".into(),
            Error::MethodNotAllowed { allow } => format!("Method not allowed; allowed: {allow}."),
            Error::PayloadTooLarge { limit } => format!("Body larger than {limit} bytes."),
            Error::Validation(_) => "The request is invalid.".into(),
            Error::UnsupportedMediaType { expected } => {
                format!("Expected content type {expected}.")
            }
            Error::Unauthorized(_) => "A valid bearer token is required.".into(),
            Error::Forbidden { permission } => format!("Missing permission {permission}."),
            Error::RateLimited {
                retry_after_seconds,
            } => {
                format!("Rate limit exceeded; retry in {retry_after_seconds} s.")
            }
            Error::NotReady { unreachable, .. } => {
                format!("Not ready; unreachable: {}.", unreachable.join(", "))
            }
            Error::Unavailable(_) => "A dependency is unavailable; retry later.".into(),
            Error::Internal(_) => "Internal error.".into(),
        }
    }

    pub fn details(&self) -> Option<Value> {
        match self {
            Error::Validation(issues) => Some(json!({ "issues": issues })),
            Error::RateLimited {
                retry_after_seconds,
            } => Some(json!({ "retryAfterSeconds": retry_after_seconds })),
            Error::PayloadTooLarge { limit } => Some(json!({ "limitBytes": limit })),
            Error::Forbidden { permission } => Some(json!({ "permission": permission })),
            Error::NotReady {
                unreachable,
                checks,
            } => Some(json!({ "unreachable": unreachable, "checks": checks })),
            Error::NotFound
            | Error::MethodNotAllowed { .. }
            | Error::UnsupportedMediaType { .. }
            | Error::Unauthorized(_)
            | Error::Unavailable(_)
            | Error::Internal(_) => None,
        }
    }

    /// Whether the failure is the server's (logged at error level, counted as 5xx).
    pub fn is_server_fault(&self) -> bool {
        self.status().is_server_error()
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

/// The error envelope of SPEC §2.1.
#[derive(Debug, Serialize)]
pub struct Envelope<'a> {
    pub error: EnvelopeBody<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvelopeBody<'a> {
    pub code: &'a str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub request_id: &'a str,
}

impl Error {
    pub fn envelope<'a>(&'a self, request_id: &'a str) -> Envelope<'a> {
        Envelope {
            error: EnvelopeBody {
                code: self.code(),
                message: self.message(),
                details: self.details(),
                request_id,
            },
        }
    }
}
