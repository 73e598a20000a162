//! `POST /apps/:name/test` `{action, input}` (SPEC §4.7 rule 7): one call of an action of the
//! installed version, enabled or not. The input is checked against the action's schema; no
//! retries, no circuit, nothing recorded but audit `app.tested`. The answer says `success`
//! with the output, `pending` with the external id, `error` or `timeout`, with `durationMs`
//! and `usage`; without `runs:context` output values and the error text are `[redacted]`.
//! A runner that could not run the call at all (busy, away, failing) is 502 `app_call_failed`.
//! An app that needs documents gets a call token without a subject: its `document_list` answers
//! no documents, since a test call belongs to no run and so to no subject.

use std::time::Duration;

use http::{Response, StatusCode};
use readers::apps::{installs, versions};
use readers::redaction::{REDACTED, redact_values};
use runner::client::{CallAnswer, RunnerCode, RunnerFailure};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use service::http::{Body, response};
use topics::call_token::CallGrant;
use topics::installs::RecordTest;
use uuid::Uuid;

use super::apps::viewer;
use crate::auth::Permission;
use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};
use crate::install_secrets;
use crate::path;
use crate::state::State;
use crate::version_schemas::SchemaOf;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestCall {
    action: String,
    #[serde(default)]
    input: Value,
}

/// How a test call ended.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    external_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    duration_ms: f64,
    usage: Value,
}

pub(crate) async fn call(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name) = (call.state, call.origin(), call.param("name"));
    let (runner, _) = state.apps.ready()?;
    let name = path::app_name(name)?.to_owned();
    let test: TestCall = call.json().await?;
    let tenant = readers::Tenant::new(origin.caller.tenant);
    let mut connection = state.reads.connection().await?;
    let install = installs::get(&mut connection, tenant, &name)
        .await?
        .ok_or(Error::AppNotInstalled)?;
    let version = versions::get(
        &mut *connection,
        viewer(origin.caller),
        &name,
        install.version_id,
    )
    .await?
    .ok_or_else(|| Error::Internal("the installed version is not visible".into()))?;
    if state.apps.is_blocked(&version.sha256) {
        return Err(Error::AppBlocked);
    }
    let action = &version.manifest["actions"][&test.action];
    if !action.is_object() {
        return Err(Error::validation(
            Location::Body,
            "/action",
            format!("{name} {} has no such action", version.version),
        ));
    }
    let input_schema = SchemaOf::Input(&test.action);
    state
        .apps
        .version_schemas
        .check(
            version.id,
            &version.manifest,
            input_schema,
            &test.input,
            "/input",
        )
        .map_err(Error::body_issues)?;
    if !install.missing_secrets.is_empty() {
        return Err(Error::Refused(topics::Refusal {
            code: topics::RefusalCode::AppNotConfigured,
            message: "Secrets have no value yet; store them before testing.".into(),
            details: Some(json!({ "missingSecrets": install.missing_secrets })),
        }));
    }
    let secrets =
        install_secrets::opened(state, &mut *connection, origin.caller.tenant, &name).await?;
    drop(connection);
    let timeout_ms = action["timeoutMs"].as_u64().unwrap_or(15_000);
    let call_id = Uuid::now_v7();
    let mut request = json!({
        "module": version.sha256,
        "app": { "name": name, "version": version.version },
        "call": { "id": call_id.to_string(), "tenantId": origin.caller.tenant },
        "action": test.action,
        "config": install.config,
        "input": test.input,
        "secrets": secrets,
        "hosts": install.approved_hosts,
        "timeoutMs": timeout_ms,
        "memoryMiB": version.manifest["memoryMiB"],
    });
    if version.manifest["needs"] == json!(["documents"]) {
        let grant = CallGrant {
            tenant: origin.caller.tenant,
            call: call_id,
            subject: None,
        };
        if let Some(token) = call_token(state, &grant)? {
            request["callToken"] = Value::String(token);
        }
    }
    let answered = runner
        .invoke(
            &request,
            Duration::from_millis(timeout_ms),
            origin.request_id,
        )
        .await;
    let outcome = outcome_of(answered)?;
    let record = RecordTest {
        name,
        version_id: version.id,
        action: test.action,
        status: outcome.status.to_owned(),
        duration_ms: outcome.duration_ms,
    };
    // What the audit row holds is the stage's; the caller gets the call's outcome.
    commands::submit(&state.commands, origin, record).await?;
    let outcome = if origin.caller.has(Permission::RunsContext) {
        outcome
    } else {
        redacted(outcome)
    };
    Ok(response::json(StatusCode::OK, &outcome))
}

/// A call token for `grant`; none without `APP_CALL_TOKEN_SECRET` (the module's document
/// reads are then refused, as in runs).
fn call_token(state: &State, grant: &CallGrant) -> Result<Option<String>, Error> {
    let Some(key) = state.config.call_tokens.as_deref() else {
        return Ok(None);
    };
    key.mint(grant)
        .map(Some)
        .map_err(|e| Error::Internal(e.to_string()))
}

/// The runner's answer as the test route reports it.
fn outcome_of(answered: Result<CallAnswer, RunnerFailure>) -> Result<Outcome, Error> {
    let (status, output, external_id, error, duration_ms, usage) = match answered {
        Ok(CallAnswer {
            answer,
            usage,
            duration_ms,
        }) => match answer["status"].as_str() {
            Some("ok") => (
                "success",
                Some(answer["output"].clone()),
                None,
                None,
                duration_ms,
                usage,
            ),
            Some("pending") => {
                let external_id = answer["externalId"].as_str().map(str::to_owned);
                ("pending", None, external_id, None, duration_ms, usage)
            }
            _ => {
                let message = answer["message"].as_str().unwrap_or("the module failed");
                (
                    "error",
                    None,
                    None,
                    Some(message.to_owned()),
                    duration_ms,
                    usage,
                )
            }
        },
        Err(failure) if failure.code == RunnerCode::Timeout => (
            "timeout",
            None,
            None,
            Some(failure.message),
            failure.duration_ms.unwrap_or_default(),
            failure.usage.unwrap_or(Value::Null),
        ),
        Err(failure) if failure.code.counts_against_circuit() => (
            "error",
            None,
            None,
            Some(format!("{}: {}", failure.code.as_str(), failure.message)),
            failure.duration_ms.unwrap_or_default(),
            failure.usage.unwrap_or(Value::Null),
        ),
        Err(failure) => return Err(Error::AppCallFailed(failure)),
    };
    Ok(Outcome {
        status,
        output,
        external_id,
        error,
        duration_ms,
        usage,
    })
}

/// What a caller without `runs:context` sees: output values and the error text hidden, keys
/// kept at every depth.
fn redacted(outcome: Outcome) -> Outcome {
    Outcome {
        output: outcome.output.map(redact_values),
        error: outcome.error.map(|_| REDACTED.to_owned()),
        ..outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(answer: Value) -> Result<CallAnswer, RunnerFailure> {
        Ok(CallAnswer {
            answer,
            usage: json!({"httpRequests": 1, "documentReads": 0, "logLines": 2}),
            duration_ms: 3.5,
        })
    }

    fn failure(code: RunnerCode) -> Result<CallAnswer, RunnerFailure> {
        Err(RunnerFailure {
            code,
            message: "went wrong".into(),
            details: None,
            usage: Some(json!({"httpRequests": 0, "documentReads": 0, "logLines": 0})),
            duration_ms: Some(100.0),
        })
    }

    #[test]
    fn each_answer_has_its_status() {
        let ok = outcome_of(answer(json!({"status": "ok", "output": {"a": 1}}))).expect("ok");
        assert_eq!((ok.status, ok.output), ("success", Some(json!({"a": 1}))));
        let pending = outcome_of(answer(json!({"status": "pending", "externalId": "x"})));
        assert_eq!(pending.expect("ok").external_id.as_deref(), Some("x"));
        let error = outcome_of(answer(json!({"status": "error", "message": "no"}))).expect("ok");
        assert_eq!(
            (error.status, error.error.as_deref()),
            ("error", Some("no"))
        );
        assert_eq!(
            outcome_of(failure(RunnerCode::Timeout)).expect("ok").status,
            "timeout"
        );
        assert_eq!(
            outcome_of(failure(RunnerCode::Trapped)).expect("ok").status,
            "error"
        );
        assert!(matches!(
            outcome_of(failure(RunnerCode::Busy)),
            Err(Error::AppCallFailed(_))
        ));
    }

    #[test]
    fn redaction_keeps_keys_and_hides_values_and_errors() {
        let outcome = Outcome {
            status: "success",
            output: Some(json!({"score": 0.3, "hits": [{"name": "x"}]})),
            external_id: None,
            error: Some("vendor said canary".into()),
            duration_ms: 1.0,
            usage: Value::Null,
        };
        let shown = redacted(outcome);
        assert_eq!(
            shown.output,
            Some(json!({"score": "[redacted]", "hits": [{"name": "[redacted]"}]}))
        );
        assert_eq!(shown.error.as_deref(), Some("[redacted]"));
    }
}
