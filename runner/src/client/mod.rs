//! The one client of the runner's `/v1/*` routes, used by the API (inspection at upload, the
//! test call, webhooks and hand-offs) and the pipeline (calls of runs): the bearer, a deadline
//! per request, and every failure as a [`RunnerCode`] of SPEC §7, with `unreachable` when the
//! runner did not answer.

mod code;

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;

pub use code::RunnerCode;
use schema::module::Sha256;

/// How much longer than the call's own deadline the client waits for the runner's answer
/// (admission, module fetch and the answer's way back).
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);
/// The deadline of `handle_webhook` and `handoff` (SPEC §8).
const EXPORT_DEADLINE: Duration = Duration::from_secs(15);
/// The deadline of an inspection: compiling a large module included.
const INSPECT_DEADLINE: Duration = Duration::from_secs(150);

/// A runner failure as the caller handles it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("runner {}: {message}", .code.as_str())]
pub struct RunnerFailure {
    pub code: RunnerCode,
    pub message: String,
    /// The envelope's `details` (a refusal's `code` and `issues`, a timeout's `deadlineMs`).
    pub details: Option<Value>,
    /// What a call that ran before failing used, and how long it ran.
    pub usage: Option<Value>,
    pub duration_ms: Option<f64>,
}

impl RunnerFailure {
    fn unreachable(message: impl Into<String>) -> Self {
        Self {
            code: RunnerCode::Unreachable,
            message: message.into(),
            details: None,
            usage: None,
            duration_ms: None,
        }
    }
}

/// A module the runner inspected: capped, hashed, with its manifest.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub sha256: Sha256,
    pub manifest: Value,
    /// The capped module: the bytes to store under `sha256`.
    pub module: Bytes,
}

/// The runner's answer to a call that ran.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAnswer {
    /// The module's envelope as it answered it.
    pub answer: Value,
    pub usage: Value,
    pub duration_ms: f64,
}

/// The runner's `/v1/*` routes.
#[derive(Debug, Clone)]
pub struct RunnerClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InspectAnswer {
    sha256: Sha256,
    manifest: Value,
    module_base64: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FailureAnswer {
    error: FailureBody,
    usage: Option<Value>,
    duration_ms: Option<f64>,
}

#[derive(Deserialize)]
struct FailureBody {
    code: String,
    message: String,
    details: Option<Value>,
}

impl RunnerClient {
    pub fn new(base: &str, token: &str) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            http,
        })
    }

    /// `POST /v1/inspect`: applies the module rules and answers the capped module. An
    /// inspection has no effect, so one the runner could not take (busy, away) is tried again
    /// a few times before its failure is answered.
    pub async fn inspect(
        &self,
        module: Bytes,
        request_id: &str,
    ) -> Result<Inspection, RunnerFailure> {
        let attempt = || async {
            let request = self
                .http
                .post(format!("{}/v1/inspect", self.base))
                .header(http::header::CONTENT_TYPE, "application/wasm")
                .body(module.clone());
            self.send::<InspectAnswer>(request, INSPECT_DEADLINE, request_id)
                .await
        };
        let answer = attempt
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(Duration::from_millis(50))
                    .with_max_delay(Duration::from_secs(1))
                    .with_jitter()
                    .with_max_times(6),
            )
            .when(|failure: &RunnerFailure| failure.code.is_retried())
            .await?;
        let module = BASE64
            .decode(answer.module_base64)
            .map_err(|_| bad_answer("inspect answered a module that is not base64"))?;
        if Sha256::of(&module) != answer.sha256 {
            return Err(bad_answer(
                "inspect answered a module that does not match its hash",
            ));
        }
        Ok(Inspection {
            sha256: answer.sha256,
            manifest: answer.manifest,
            module: Bytes::from(module),
        })
    }

    /// `POST /v1/invoke` with `request` (contract `invokeRequest`), waiting at most the call's
    /// `timeout` and a margin.
    pub async fn invoke(
        &self,
        request: &Value,
        timeout: Duration,
        request_id: &str,
    ) -> Result<CallAnswer, RunnerFailure> {
        self.call("invoke", request, timeout + DEADLINE_MARGIN, request_id)
            .await
    }

    /// `POST /v1/webhooks/handle` with `request` (contract `webhookRequest`): the module reads
    /// a vendor webhook, within the export's 15 s deadline and a margin.
    pub async fn handle_webhook(
        &self,
        request: &Value,
        request_id: &str,
    ) -> Result<CallAnswer, RunnerFailure> {
        let deadline = EXPORT_DEADLINE + DEADLINE_MARGIN;
        self.call("webhooks/handle", request, deadline, request_id)
            .await
    }

    /// `POST /v1/handoff` with `request` (contract `handoffRequest`).
    pub async fn handoff(
        &self,
        request: &Value,
        request_id: &str,
    ) -> Result<CallAnswer, RunnerFailure> {
        let deadline = EXPORT_DEADLINE + DEADLINE_MARGIN;
        self.call("handoff", request, deadline, request_id).await
    }

    /// `POST /v1/<route>` with a JSON `request`, answered within `deadline`.
    async fn call(
        &self,
        route: &str,
        request: &Value,
        deadline: Duration,
        request_id: &str,
    ) -> Result<CallAnswer, RunnerFailure> {
        let request = self
            .http
            .post(format!("{}/v1/{route}", self.base))
            .json(request);
        self.send(request, deadline, request_id).await
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        request: reqwest::RequestBuilder,
        deadline: Duration,
        request_id: &str,
    ) -> Result<T, RunnerFailure> {
        let mut request = request
            .bearer_auth(&self.token)
            .header("x-request-id", request_id);
        // The caller's trace goes on into the runner's server span (and its vendor requests).
        if let Some(traceparent) = service::telemetry::traces::current_traceparent() {
            request = request.header("traceparent", traceparent);
        }
        let response = request
            .timeout(deadline)
            .send()
            .await
            .map_err(|e| RunnerFailure::unreachable(describe(&e)))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| RunnerFailure::unreachable(describe(&e)))?;
        if status.is_success() {
            return serde_json::from_slice(&body)
                .map_err(|e| bad_answer(format!("the runner's answer does not read: {e}")));
        }
        let failure: FailureAnswer = serde_json::from_slice(&body).map_err(|_| {
            bad_answer(format!("the runner answered {status} without its envelope"))
        })?;
        Err(RunnerFailure {
            code: RunnerCode::parse(&failure.error.code).unwrap_or(RunnerCode::Internal),
            message: failure.error.message,
            details: failure.error.details,
            usage: failure.usage,
            duration_ms: failure.duration_ms,
        })
    }
}

/// The runner answered something its contract does not allow: its failure.
fn bad_answer(message: impl Into<String>) -> RunnerFailure {
    RunnerFailure {
        code: RunnerCode::Internal,
        message: message.into(),
        details: None,
        usage: None,
        duration_ms: None,
    }
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "the runner did not answer in time".into()
    } else if error.is_connect() {
        "the runner refused the connection or is not reachable".into()
    } else {
        format!("the runner's answer broke off: {error}")
    }
}
