//! Every failure the runner answers, and its one mapping to HTTP status, code, details and
//! headers (SPEC §7 "Runner failures"). `service::http::response::error` writes the platform's
//! envelope (SPEC §2.1) from it.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Map, Value, json};
use service::http::HttpError;

use crate::client::RunnerCode;

pub use schema::Issue;

service::labels! {
    /// Why a module is refused (`details.code` of `invalid_module` and of the API's upload
    /// refusal, SPEC §4.11).
    pub enum Refusal {
        NotWasm = "not_wasm",
        InvalidModule = "invalid_module",
        ForbiddenImport = "forbidden_import",
        ImportedMemory = "imported_memory",
        MissingExport = "missing_export",
    }
}

/// Failures of the runner.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("unauthorized")]
    Unauthorized,
    #[error("bad request")]
    BadRequest(Vec<Issue>),
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed { allow: String },
    #[error("payload too large")]
    PayloadTooLarge { limit: usize },
    #[error("module {0} not found")]
    ModuleNotFound(String),
    #[error("module refused ({}): {message}", .refusal.as_str())]
    InvalidModule {
        refusal: Refusal,
        message: String,
        issues: Vec<Issue>,
    },
    #[error("missing export {0}")]
    MissingExport(String),
    #[error("call ran past its deadline of {deadline_ms} ms")]
    Timeout { deadline_ms: u64 },
    #[error("module trapped: {0}")]
    Trapped(String),
    #[error("bad output: {0}")]
    BadOutput(String),
    #[error("busy: {0}")]
    Busy(&'static str),
    #[error("module unavailable: {0}")]
    ModuleUnavailable(String),
    #[error("internal: {0}")]
    Internal(String),
    /// A call that ran and then failed: its failure, and what it used before failing (every
    /// call answer carries `usage`, SPEC §2.4).
    #[error("{error}")]
    CallFailed {
        error: Box<Error>,
        usage: crate::call::Usage,
        duration_ms: f64,
    },
}

impl Error {
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Self {
        Error::InvalidModule {
            refusal,
            message: message.into(),
            issues: Vec::new(),
        }
    }

    /// The failure itself, whatever the call used.
    pub fn cause(&self) -> &Error {
        match self {
            Error::CallFailed { error, .. } => error.cause(),
            other => other,
        }
    }
}

impl HttpError for Error {
    fn status(&self) -> StatusCode {
        match self {
            Error::CallFailed { error, .. } => error.status(),
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::NotFound | Error::ModuleNotFound(_) => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Error::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::InvalidModule { .. } | Error::MissingExport(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Error::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Error::Trapped(_) | Error::BadOutput(_) => StatusCode::BAD_GATEWAY,
            Error::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::ModuleUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The code of SPEC §7's runner table (plus the generic HTTP ones).
    fn code(&self) -> &'static str {
        let code = match self {
            Error::CallFailed { error, .. } => return error.code(),
            Error::NotFound => return "not_found",
            Error::MethodNotAllowed { .. } => return "method_not_allowed",
            Error::PayloadTooLarge { .. } => return "payload_too_large",
            Error::Unauthorized => RunnerCode::Unauthorized,
            Error::BadRequest(_) => RunnerCode::BadRequest,
            Error::ModuleNotFound(_) => RunnerCode::ModuleNotFound,
            Error::InvalidModule { .. } => RunnerCode::InvalidModule,
            Error::MissingExport(_) => RunnerCode::MissingExport,
            Error::Timeout { .. } => RunnerCode::Timeout,
            Error::Trapped(_) => RunnerCode::Trapped,
            Error::BadOutput(_) => RunnerCode::BadOutput,
            Error::Busy(_) => RunnerCode::Busy,
            Error::ModuleUnavailable(_) => RunnerCode::ModuleUnavailable,
            Error::Internal(_) => RunnerCode::Internal,
        };
        code.as_str()
    }

    /// The message shown to the caller. Internal failures say nothing about their cause; the
    /// cause goes to the log line.
    fn message(&self) -> Cow<'static, str> {
        match self {
            Error::CallFailed { error, .. } => error.message(),
            Error::Internal(_) => "Internal error.".into(),
            Error::BadRequest(_) => "The request does not match the contract.".into(),
            other => {
                let text = other.to_string();
                let mut chars = text.chars();
                match chars.next() {
                    Some(first) => {
                        (first.to_uppercase().chain(chars).collect::<String>() + ".").into()
                    }
                    None => "".into(),
                }
            }
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            Error::CallFailed { error, .. } => error.details(),
            Error::BadRequest(issues) => Some(json!({ "issues": issues })),
            Error::InvalidModule {
                refusal, issues, ..
            } => Some(if issues.is_empty() {
                json!({ "code": refusal.as_str() })
            } else {
                json!({ "code": refusal.as_str(), "issues": issues })
            }),
            Error::MissingExport(export) => {
                Some(json!({ "code": "missing_export", "export": export }))
            }
            Error::Timeout { deadline_ms } => Some(json!({ "deadlineMs": deadline_ms })),
            _ => None,
        }
    }

    fn headers(&self, headers: &mut HeaderMap) {
        match self.cause() {
            Error::Unauthorized => {
                headers.insert(
                    http::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer"),
                );
            }
            Error::MethodNotAllowed { allow } => {
                if let Ok(value) = HeaderValue::from_str(allow) {
                    headers.insert(http::header::ALLOW, value);
                }
            }
            Error::Busy(_) => {
                headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
    }

    /// A call that ran answers what it used beside its failure (SPEC §2.4 `usage`).
    fn beside(&self) -> Option<Map<String, Value>> {
        match self {
            Error::CallFailed {
                usage, duration_ms, ..
            } => json!({ "usage": usage, "durationMs": duration_ms })
                .as_object()
                .cloned(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use service::http::ErrorEnvelope;

    use super::*;

    #[test]
    fn every_runner_failure_has_the_spec_status() {
        let table = [
            (Error::Unauthorized, 401, "unauthorized"),
            (Error::BadRequest(vec![]), 400, "bad_request"),
            (Error::ModuleNotFound("ab".into()), 404, "module_not_found"),
            (
                Error::refused(Refusal::ForbiddenImport, "x"),
                422,
                "invalid_module",
            ),
            (Error::MissingExport("invoke".into()), 422, "missing_export"),
            (Error::Timeout { deadline_ms: 100 }, 504, "timeout"),
            (Error::Trapped("unreachable".into()), 502, "trapped"),
            (Error::BadOutput("not json".into()), 502, "bad_output"),
            (Error::Busy("tenant"), 429, "busy"),
            (
                Error::ModuleUnavailable("down".into()),
                503,
                "module_unavailable",
            ),
            (Error::Internal("bug".into()), 500, "internal"),
            (Error::NotFound, 404, "not_found"),
            (
                Error::MethodNotAllowed {
                    allow: "POST".into(),
                },
                405,
                "method_not_allowed",
            ),
            (
                Error::PayloadTooLarge { limit: 8 },
                413,
                "payload_too_large",
            ),
            (
                Error::CallFailed {
                    error: Box::new(Error::Trapped("unreachable".into())),
                    usage: crate::call::Usage::default(),
                    duration_ms: 1.5,
                },
                502,
                "trapped",
            ),
        ];
        for (error, status, code) in table {
            assert_eq!(error.status().as_u16(), status, "{code}");
            assert_eq!(error.code(), code);
            let envelope = ErrorEnvelope::of(&error, "req-1").to_value();
            assert_eq!(envelope["error"]["code"], code);
            assert_eq!(envelope["error"]["requestId"], "req-1");
            assert_eq!(
                crate::contract::check(crate::contract::Definition::FailureAnswer, &envelope),
                Ok(()),
                "{envelope}"
            );
        }
    }

    #[test]
    fn a_call_that_ran_and_failed_answers_its_cause_and_what_it_used() {
        let failed = Error::CallFailed {
            error: Box::new(Error::Timeout { deadline_ms: 300 }),
            usage: crate::call::Usage {
                http_requests: 3,
                document_reads: 1,
                log_lines: 2,
            },
            duration_ms: 301.5,
        };
        assert_eq!(failed.status().as_u16(), 504);
        assert!(matches!(failed.cause(), Error::Timeout { .. }));
        let envelope = ErrorEnvelope::of(&failed, "r").to_value();
        assert_eq!(envelope["error"]["code"], "timeout");
        assert_eq!(envelope["error"]["details"]["deadlineMs"], 300);
        assert_eq!(
            envelope["usage"],
            json!({"httpRequests": 3, "documentReads": 1, "logLines": 2})
        );
        assert_eq!(envelope["durationMs"], 301.5);
    }

    #[test]
    fn a_refusal_names_its_reason_and_internal_errors_hide_their_cause() {
        let refused = Error::refused(Refusal::ImportedMemory, "memory is imported");
        assert_eq!(
            ErrorEnvelope::of(&refused, "r").to_value()["error"]["details"]["code"],
            "imported_memory"
        );
        let internal = Error::Internal("secret path /var/x".into());
        assert!(
            !ErrorEnvelope::of(&internal, "r")
                .to_value()
                .to_string()
                .contains("/var/x")
        );
    }
}
