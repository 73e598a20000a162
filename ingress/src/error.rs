//! Every failure the API answers, and the one exhaustive mapping from failure to status, code,
//! message, details and headers (SPEC §2.1, §7). Handlers return [`Error`];
//! `service::http::response::error` writes its envelope.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue, StatusCode};
use runner::client::{RunnerCode, RunnerFailure};
use serde::Serialize;
use serde_json::{Value, json};
use service::health::NotReady;
use service::http::HttpError;
use topics::{Refusal, RefusalCode};

/// Where a validation issue was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Location {
    Query,
    Path,
    Header,
    Body,
}

/// One reason a request is invalid (`details.issues[]` of `validation_error`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Issue {
    #[serde(rename = "in")]
    pub(crate) location: Location,
    /// Parameter or header name, or JSON Pointer into the body (`""` for the whole body).
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

service::labels! {
    /// Why a bearer token was refused. Never shown to the caller beyond a generic message: the
    /// reason goes to the log line, so forged tokens teach an attacker nothing.
    pub(crate) enum AuthFailure {
        Missing = "missing",
        NotBearer = "not_bearer",
        Invalid = "invalid",
        Expired = "expired",
        NotYetValid = "not_yet_valid",
        BadClaims = "bad_claims",
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
    /// The stage refused the command (SPEC §7 code decided from the state it holds).
    #[error("refused ({}): {}", refusal_code(.0), .0.message)]
    Refused(Refusal),
    /// A conflict the API decides alone, before producing anything.
    #[error("conflict: {0}")]
    Conflict(String),
    /// No runner or no object storage on this deployment (SPEC §4.7 rule 9).
    #[error("apps unavailable")]
    AppsUnavailable,
    /// No `SECRET_STORE_KEY` (SPEC §4.7 rule 2).
    #[error("secret store unavailable")]
    SecretStoreUnavailable,
    /// The module is listed in `APP_BLOCKED_SHA256`.
    #[error("module blocked")]
    AppBlocked,
    /// A test call of an app the tenant has not installed.
    #[error("app not installed")]
    AppNotInstalled,
    #[error("unsupported media type; expected {expected}")]
    UnsupportedMediaType { expected: &'static str },
    /// The runner refused an uploaded module (SPEC §4.11): 400 with `details.code`.
    #[error("module refused ({code})")]
    ModuleRefused {
        code: String,
        message: String,
        issues: Vec<Issue>,
    },
    /// The runner failed while inspecting an upload: 502 `runner_<code>`.
    #[error("runner failed inspecting: {0}")]
    InspectFailed(RunnerFailure),
    /// The runner failed a test call: 502 `app_call_failed` with `details.reason`.
    #[error("app call failed: {0}")]
    AppCallFailed(RunnerFailure),
    /// The command is on the log but its outcome did not come within the wait.
    #[error("command {command_id} not applied yet")]
    CommandTimeout { command_id: uuid::Uuid },
    /// A webhook without an external id (SPEC §4.8 step 1).
    #[error("webhook without an external id")]
    MissingExternalId,
    /// The module rejected the webhook (SPEC §4.8).
    #[error("webhook rejected by the module")]
    WebhookRejected,
    /// The module or the runner failed on a webhook: 502 with `details.reason` (the module's
    /// own words are the vendor's business, never logged).
    #[error("webhook failed ({reason})")]
    AppWebhookFailed { reason: &'static str },
    /// More work than this instance takes at once: 503 with `Retry-After`, nothing recorded.
    #[error("overloaded")]
    Overloaded { retry_after_seconds: u64 },
    /// Nothing waits for the applicant (SPEC §4.9).
    #[error("no hand-off waits")]
    HandoffUnavailable,
    /// The app (or the runner) failed the hand-off: 502 with `details.reason`.
    #[error("hand-off failed ({reason})")]
    HandoffFailed { reason: &'static str },
}

/// The code of a stage's refusal (SPEC §7).
fn refusal_code(refusal: &Refusal) -> &'static str {
    match refusal.code {
        RefusalCode::NotFound => "not_found",
        RefusalCode::Conflict => "conflict",
        RefusalCode::FourEyes => "four_eyes",
        RefusalCode::AppNotConfigured => "app_not_configured",
        RefusalCode::AppInUse => "app_in_use",
        RefusalCode::ValidationError => "validation_error",
    }
}

fn refusal_status(refusal: &Refusal) -> StatusCode {
    match refusal.code {
        RefusalCode::NotFound => StatusCode::NOT_FOUND,
        RefusalCode::FourEyes => StatusCode::FORBIDDEN,
        RefusalCode::ValidationError => StatusCode::BAD_REQUEST,
        RefusalCode::Conflict | RefusalCode::AppNotConfigured | RefusalCode::AppInUse => {
            StatusCode::CONFLICT
        }
    }
}

/// `runner_<code>` of an upload whose inspection the runner failed (SPEC §4.11).
fn inspect_code(code: RunnerCode) -> &'static str {
    match code {
        RunnerCode::Unauthorized => "runner_unauthorized",
        RunnerCode::BadRequest => "runner_bad_request",
        RunnerCode::ModuleNotFound => "runner_module_not_found",
        RunnerCode::InvalidModule => "runner_invalid_module",
        RunnerCode::MissingExport => "runner_missing_export",
        RunnerCode::Timeout => "runner_timeout",
        RunnerCode::Trapped => "runner_trapped",
        RunnerCode::BadOutput => "runner_bad_output",
        RunnerCode::Busy => "runner_busy",
        RunnerCode::ModuleUnavailable => "runner_module_unavailable",
        RunnerCode::Internal => "runner_internal",
        RunnerCode::Unreachable => "runner_unreachable",
    }
}

impl Error {
    pub(crate) fn validation(
        location: Location,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Validation(vec![Issue::new(location, path, message)])
    }

    /// The issues a body failed a schema with (their paths point into the body).
    pub(crate) fn body_issues(issues: Vec<schema::Issue>) -> Self {
        Error::Validation(
            issues
                .into_iter()
                .map(|i| Issue::new(Location::Body, i.path, i.message))
                .collect(),
        )
    }

    /// Whether the failure is the server's (logged at error level, counted as 5xx).
    pub(crate) fn is_server_fault(&self) -> bool {
        self.status().is_server_error()
    }
}

impl Error {
    /// Its status and code (SPEC §2.1), one row a failure.
    fn class(&self) -> (StatusCode, &'static str) {
        match self {
            Error::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Error::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
            }
            Error::PayloadTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Error::Validation(_) => (StatusCode::BAD_REQUEST, "validation_error"),
            Error::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Error::Forbidden { .. } => (StatusCode::FORBIDDEN, "forbidden"),
            Error::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            Error::NotReady(not_ready) => (StatusCode::SERVICE_UNAVAILABLE, not_ready.code()),
            Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Error::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            Error::Refused(refusal) => (refusal_status(refusal), refusal_code(refusal)),
            Error::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            Error::AppsUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "apps_unavailable"),
            Error::SecretStoreUnavailable => {
                (StatusCode::SERVICE_UNAVAILABLE, "secret_store_unavailable")
            }
            Error::AppBlocked => (StatusCode::CONFLICT, "app_blocked"),
            Error::AppNotInstalled => (StatusCode::CONFLICT, "app_not_installed"),
            Error::UnsupportedMediaType { .. } => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            Error::ModuleRefused { .. } => (StatusCode::BAD_REQUEST, "validation_error"),
            Error::InspectFailed(failure) => (StatusCode::BAD_GATEWAY, inspect_code(failure.code)),
            Error::AppCallFailed(_) => (StatusCode::BAD_GATEWAY, "app_call_failed"),
            Error::CommandTimeout { .. } => (StatusCode::GATEWAY_TIMEOUT, "command_timeout"),
            Error::MissingExternalId => (StatusCode::BAD_REQUEST, "missing_external_id"),
            Error::WebhookRejected => (StatusCode::UNAUTHORIZED, "webhook_rejected"),
            Error::AppWebhookFailed { .. } => (StatusCode::BAD_GATEWAY, "app_webhook_failed"),
            Error::Overloaded { .. } => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Error::HandoffUnavailable => (StatusCode::CONFLICT, "handoff_unavailable"),
            Error::HandoffFailed { .. } => (StatusCode::BAD_GATEWAY, "handoff_failed"),
        }
    }
}

impl HttpError for Error {
    fn status(&self) -> StatusCode {
        self.class().0
    }

    fn code(&self) -> &'static str {
        self.class().1
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
            Error::Refused(refusal) => refusal.message.clone().into(),
            Error::Conflict(message) => message.clone().into(),
            Error::AppsUnavailable => {
                "Apps are unavailable: this deployment has no app runner or no object storage."
                    .into()
            }
            Error::SecretStoreUnavailable => {
                "Secrets are unavailable: this deployment has no SECRET_STORE_KEY.".into()
            }
            Error::AppBlocked => "The operator blocked this module.".into(),
            Error::AppNotInstalled => "The app is not installed.".into(),
            Error::UnsupportedMediaType { expected } => {
                format!("The body must be {expected}.").into()
            }
            Error::ModuleRefused { message, .. } => message.clone().into(),
            Error::InspectFailed(failure) => format!(
                "The app runner failed inspecting the module ({}).",
                failure.code.as_str()
            )
            .into(),
            Error::AppCallFailed(failure) => format!(
                "The app runner failed the call ({}).",
                failure.code.as_str()
            )
            .into(),
            Error::CommandTimeout { .. } => {
                "The change was accepted but not applied within the wait; it will apply.".into()
            }
            Error::MissingExternalId => {
                "No external id: give ?externalId= or send it where the app reads it.".into()
            }
            Error::WebhookRejected => "The app rejected the webhook.".into(),
            Error::AppWebhookFailed { reason } => {
                format!("The app failed reading the webhook ({reason}).").into()
            }
            Error::Overloaded {
                retry_after_seconds,
            } => format!("Too busy to record it now; retry in {retry_after_seconds} s.").into(),
            Error::HandoffUnavailable => "Nothing waits for the applicant.".into(),
            Error::HandoffFailed { reason } => {
                format!("The app failed the hand-off ({reason}).").into()
            }
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
            Error::Refused(refusal) => refusal.details.clone(),
            Error::ModuleRefused { code, issues, .. } => {
                Some(json!({ "code": code, "issues": issues }))
            }
            Error::AppCallFailed(failure) => Some(json!({ "reason": failure.code.as_str() })),
            Error::CommandTimeout { command_id } => Some(json!({ "commandId": command_id })),
            Error::AppWebhookFailed { reason } | Error::HandoffFailed { reason } => {
                Some(json!({ "reason": reason }))
            }
            Error::Overloaded {
                retry_after_seconds,
            } => Some(json!({ "retryAfterSeconds": retry_after_seconds })),
            Error::UnsupportedMediaType { expected } => Some(json!({ "expected": expected })),
            Error::Conflict(_)
            | Error::AppsUnavailable
            | Error::SecretStoreUnavailable
            | Error::AppBlocked
            | Error::AppNotInstalled
            | Error::InspectFailed(_)
            | Error::NotFound
            | Error::MethodNotAllowed { .. }
            | Error::Unauthorized(_)
            | Error::Unavailable(_)
            | Error::MissingExternalId
            | Error::WebhookRejected
            | Error::HandoffUnavailable
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
            }
            | Error::Overloaded {
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
