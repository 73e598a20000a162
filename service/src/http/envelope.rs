//! The error envelope (SPEC §2.1): the body of every non-2xx answer of every listener. A
//! service's error type says what went wrong through [`HttpError`]; only
//! [`super::response::error`] turns it into a response, so every listener writes the same shape.

use std::borrow::Cow;

use http::{HeaderMap, StatusCode};
use serde::Serialize;
use serde_json::{Map, Value};

/// A failure as an HTTP answer: status, stable code, caller-facing message and details.
pub trait HttpError {
    fn status(&self) -> StatusCode;

    /// The stable machine-readable code (`error.code`).
    fn code(&self) -> &'static str;

    /// The caller-facing message. Causes the caller must not see stay out of it (they go to
    /// the log line).
    fn message(&self) -> Cow<'static, str>;

    /// `error.details`, when the code has any.
    fn details(&self) -> Option<Value> {
        None
    }

    /// Headers the failure implies (`Allow`, `Retry-After`, `WWW-Authenticate`).
    fn headers(&self, _headers: &mut HeaderMap) {}

    /// Members of the body beside `error` (the runner's `usage` of a call that ran).
    fn beside(&self) -> Option<Map<String, Value>> {
        None
    }
}

/// `{"error": {code, message, details?, requestId}, ...beside}`.
#[derive(Debug, Serialize)]
pub struct ErrorEnvelope<'a> {
    pub error: ErrorBody<'a>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub beside: Option<Map<String, Value>>,
}

/// The `error` member of the envelope.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody<'a> {
    pub code: &'a str,
    pub message: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub request_id: &'a str,
}

impl<'a> ErrorEnvelope<'a> {
    pub fn of(error: &'a impl HttpError, request_id: &'a str) -> Self {
        Self {
            error: ErrorBody {
                code: error.code(),
                message: error.message(),
                details: error.details(),
                request_id,
            },
            beside: error.beside(),
        }
    }

    /// The envelope as a JSON value (tests and contract checks).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The answer of a listener for a path it does not serve, or a method a path does not take.
/// Services whose listeners have their own error type map these into it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unrouted {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: String },
}

impl HttpError for Unrouted {
    fn status(&self) -> StatusCode {
        match self {
            Unrouted::NotFound => StatusCode::NOT_FOUND,
            Unrouted::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            Unrouted::NotFound => "not_found",
            Unrouted::MethodNotAllowed { .. } => "method_not_allowed",
        }
    }

    fn message(&self) -> Cow<'static, str> {
        match self {
            Unrouted::NotFound => "Not found.".into(),
            Unrouted::MethodNotAllowed { allow } => {
                format!("Method not allowed; allowed: {allow}.").into()
            }
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        if let Unrouted::MethodNotAllowed { allow } = self
            && let Ok(value) = http::HeaderValue::from_str(allow)
        {
            headers.insert(http::header::ALLOW, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Busy;

    impl HttpError for Busy {
        fn status(&self) -> StatusCode {
            StatusCode::TOO_MANY_REQUESTS
        }
        fn code(&self) -> &'static str {
            "busy"
        }
        fn message(&self) -> Cow<'static, str> {
            "Busy.".into()
        }
        fn details(&self) -> Option<Value> {
            Some(json!({ "retryAfterSeconds": 1 }))
        }
        fn beside(&self) -> Option<Map<String, Value>> {
            json!({ "durationMs": 2.5 }).as_object().cloned()
        }
    }

    #[test]
    fn the_envelope_has_the_specs_shape() {
        assert_eq!(
            ErrorEnvelope::of(&Busy, "req-1").to_value(),
            json!({
                "error": {
                    "code": "busy",
                    "message": "Busy.",
                    "details": { "retryAfterSeconds": 1 },
                    "requestId": "req-1"
                },
                "durationMs": 2.5
            })
        );
        assert_eq!(
            ErrorEnvelope::of(&Unrouted::NotFound, "r").to_value(),
            json!({ "error": { "code": "not_found", "message": "Not found.", "requestId": "r" } })
        );
    }
}
