//! One attempt of an app call: the request to the runner's `/v1/invoke` (the install's config,
//! secrets opened for this call only, hosts, the idempotency key, and for an app that needs
//! documents a call token binding the tenant, this call and the run's subject), and its answer
//! read into what the run and the invocation record need. The token is in the request only:
//! never logged, stored or recorded.
//!
//! A runner that could not take the call (`busy`, `unreachable`, `module_unavailable`,
//! `internal`) is asked again a few times within the attempt, backing off: the call never
//! reached the install, so nothing is recorded, and the attempt fails retryable only when the
//! runner stays away.

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use runner::client::{CallAnswer, RunnerClient, RunnerCode, RunnerFailure};
use serde_json::{Value, json};
use topics::call_token::{CallGrant, CallTokenKey};
use topics::sealed::SecretKeys;
use uuid::Uuid;

use super::target::Target;

/// What an attempt asks of the runner.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// The invocation record's id, also the call's id the module sees.
    pub(crate) call_id: Uuid,
    pub(crate) tenant: Uuid,
    /// The run's subject: the documents a call token grants.
    pub(crate) subject: Option<Uuid>,
    pub(crate) app: &'a str,
    pub(crate) action: &'a str,
    pub(crate) input: &'a Value,
    pub(crate) idempotency_key: &'a str,
    pub(crate) timeout: Duration,
    /// Whether the action may answer `pending` (an asynchronous action of a step).
    pub(crate) may_pend: bool,
    pub(crate) request_id: &'a str,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// The output, valid against the action's output schema.
    Succeeded(Value),
    /// The asynchronous action answered `pending` with the vendor's id.
    Pending(String),
    /// `code` names the failure (a runner code, `error` for the module's error answer,
    /// `bad_output`, `validation_error`, ...); `retryable`: another attempt may fix it.
    Failed {
        code: String,
        message: String,
        retryable: bool,
    },
}

/// What the invocation record of an attempt that reached the install says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    /// `success`, `error`, `timeout` or `pending` (SPEC §3.3).
    pub(crate) status: &'static str,
    pub(crate) output: Option<Value>,
    pub(crate) error: Option<String>,
    pub(crate) duration_ms: f64,
    pub(crate) usage: Option<Value>,
    /// Whether the failure counts against the app's circuit (the module ran and failed).
    pub(crate) counts_against_circuit: bool,
}

/// One attempt's result: how it ended, and its record when it reached the install.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attempted {
    pub(crate) ended: Ended,
    pub(crate) reached: Option<Reached>,
}

/// The keys an attempt opens secrets and signs call tokens with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keys<'a> {
    pub(crate) secrets: Option<&'a Arc<SecretKeys>>,
    pub(crate) call_tokens: Option<&'a CallTokenKey>,
    /// `WEBHOOK_PUBLIC_URL`: the base of the callback URL a call is given.
    pub(crate) webhook_public_url: Option<&'a str>,
}

/// The call's `call` object (SPEC §4.10): the callback URL is the webhook route of the
/// version's publisher, on the deployment's public webhook address when it has one.
fn call_object(webhook_public_url: Option<&str>, target: &Target, request: &Request<'_>) -> Value {
    let mut call = json!({ "id": request.call_id, "tenantId": request.tenant });
    if let Some(base) = webhook_public_url {
        let app = request.app;
        call["callbackUrl"] = Value::String(match target.publisher {
            None => format!("{base}/webhooks/apps/{app}"),
            Some(tenant) => format!("{base}/webhooks/apps/{app}/tenants/{tenant}"),
        });
    }
    call
}

/// Makes one attempt of `request` on `target`.
pub(crate) async fn make(
    runner: Option<&RunnerClient>,
    keys: Keys<'_>,
    target: &Target,
    request: &Request<'_>,
) -> Attempted {
    let Some(runner) = runner else {
        return unreached(
            RunnerCode::Unreachable,
            "no runner is configured (APP_RUNNER_URL)",
        );
    };
    let secrets = match open_secrets(keys.secrets, target, request) {
        Ok(secrets) => secrets,
        Err(message) => return unreached_final("app_not_configured", message),
    };
    let call_token = match call_token(keys.call_tokens, target, request) {
        Ok(token) => token,
        Err(message) => return unreached_final("internal", message),
    };
    let mut body = json!({
        "module": target.sha256,
        "app": { "name": request.app, "version": target.version },
        "call": call_object(keys.webhook_public_url, target, request),
        "action": request.action,
        "idempotencyKey": request.idempotency_key,
        "config": target.config,
        "input": request.input,
        "secrets": secrets,
        "hosts": target.hosts,
        "timeoutMs": u64::try_from(request.timeout.as_millis()).unwrap_or(u64::MAX),
        "memoryMiB": target.manifest["memoryMiB"],
    });
    if let Some(token) = call_token {
        body["callToken"] = Value::String(token);
    }
    let answered = (|| runner.invoke(&body, request.timeout, request.request_id))
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(Duration::from_millis(100))
                .with_max_delay(Duration::from_secs(2))
                .with_jitter()
                .with_max_times(5),
        )
        .when(|failure: &RunnerFailure| failure.code.is_retried())
        .await;
    read(answered, target.action(request.action), request.may_pend)
}

/// The install's secrets, opened for this call only; an install with none needs no key.
fn open_secrets(
    keys: Option<&Arc<SecretKeys>>,
    target: &Target,
    request: &Request<'_>,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    if target.secrets.is_empty() {
        return Ok(Default::default());
    }
    let keys = keys.ok_or("the secret store has no key (SECRET_STORE_KEY)")?;
    keys.open_each(request.tenant, request.app, target.secrets.iter().cloned())
        .map_err(|(name, error)| format!("secret {name} does not open: {error}"))
}

/// The call token of an app that needs documents (SPEC §4.13); none for other apps. Without
/// `APP_CALL_TOKEN_SECRET` the call goes without one: the module's document reads are refused.
fn call_token(
    key: Option<&CallTokenKey>,
    target: &Target,
    request: &Request<'_>,
) -> Result<Option<String>, String> {
    if !target.needs_documents() {
        return Ok(None);
    }
    let Some(key) = key else {
        tracing::warn!(
            app = request.app,
            "the app needs documents but APP_CALL_TOKEN_SECRET is not set: no call token"
        );
        return Ok(None);
    };
    let grant = CallGrant {
        tenant: request.tenant,
        call: request.call_id,
        subject: request.subject,
    };
    key.mint(&grant).map(Some).map_err(|e| e.to_string())
}

/// The runner's answer, read against the action's manifest entry.
fn read(answered: Result<CallAnswer, RunnerFailure>, action: &Value, may_pend: bool) -> Attempted {
    let answer = match answered {
        Ok(answer) => answer,
        Err(failure) => return failed(failure),
    };
    let reached = |status, output, error: Option<String>, circuit| Reached {
        status,
        output,
        error,
        duration_ms: answer.duration_ms,
        usage: Some(answer.usage.clone()),
        counts_against_circuit: circuit,
    };
    match answer.answer["status"].as_str() {
        Some("ok") => {
            let output = answer.answer["output"].clone();
            match schema::strict::validate(&action["output"], &output, "/output") {
                Ok(()) => Attempted {
                    reached: Some(reached("success", Some(output.clone()), None, false)),
                    ended: Ended::Succeeded(output),
                },
                Err(issues) => {
                    let message = format!(
                        "the output does not match the action's output schema: {}",
                        describe(&issues)
                    );
                    Attempted {
                        reached: Some(reached("error", Some(output), Some(message.clone()), true)),
                        ended: final_failure("bad_output", message),
                    }
                }
            }
        }
        Some("pending") if may_pend && action["async"].is_object() => {
            let external_id = answer.answer["externalId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Attempted {
                reached: Some(reached("pending", None, None, false)),
                ended: Ended::Pending(external_id),
            }
        }
        Some("pending") => {
            let message = "answered pending where a synchronous answer is needed".to_owned();
            Attempted {
                reached: Some(reached("error", None, Some(message.clone()), true)),
                ended: final_failure("bad_output", message),
            }
        }
        _ => {
            let message = answer.answer["message"]
                .as_str()
                .unwrap_or("the module answered an error")
                .to_owned();
            let retryable = answer.answer["retryable"] == Value::Bool(true);
            Attempted {
                reached: Some(reached("error", None, Some(message.clone()), false)),
                ended: Ended::Failed {
                    code: "error".into(),
                    message,
                    retryable,
                },
            }
        }
    }
}

/// A runner failure: recorded when the module ran (a timeout, a trap, a bad answer, a module
/// that does not run); retryable when another attempt may go otherwise.
fn failed(failure: RunnerFailure) -> Attempted {
    let code = failure.code;
    if code.is_retried() || !code.counts_against_circuit() {
        return unreached(code, &failure.message);
    }
    let message = format!("{}: {}", code.as_str(), failure.message);
    let retryable = matches!(code, RunnerCode::Timeout | RunnerCode::Trapped);
    Attempted {
        reached: Some(Reached {
            status: if code == RunnerCode::Timeout {
                "timeout"
            } else {
                "error"
            },
            output: None,
            error: Some(message.clone()),
            duration_ms: failure.duration_ms.unwrap_or_default(),
            usage: failure.usage,
            counts_against_circuit: true,
        }),
        ended: Ended::Failed {
            code: code.as_str().to_owned(),
            message,
            retryable,
        },
    }
}

/// The runner did not run the call: retryable when it may next time (busy, away).
fn unreached(code: RunnerCode, message: &str) -> Attempted {
    Attempted {
        ended: Ended::Failed {
            code: code.as_str().to_owned(),
            message: message.to_owned(),
            retryable: code.is_retried(),
        },
        reached: None,
    }
}

fn unreached_final(code: &str, message: String) -> Attempted {
    Attempted {
        ended: final_failure(code, message),
        reached: None,
    }
}

fn final_failure(code: &str, message: String) -> Ended {
    Ended::Failed {
        code: code.to_owned(),
        message,
        retryable: false,
    }
}

/// Schema issues in one line.
pub(crate) fn describe(issues: &[schema::Issue]) -> String {
    issues
        .iter()
        .map(|i| format!("{} {}", i.path, i.message))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::target::Circuit;
    use super::*;

    fn answered(answer: Value) -> Result<CallAnswer, RunnerFailure> {
        Ok(CallAnswer {
            answer,
            usage: json!({"httpRequests": 1, "documentReads": 0, "logLines": 0}),
            duration_ms: 4.0,
        })
    }

    fn runner_failure(code: RunnerCode) -> Result<CallAnswer, RunnerFailure> {
        Err(RunnerFailure {
            code,
            message: "went wrong".into(),
            details: None,
            usage: None,
            duration_ms: Some(9.0),
        })
    }

    fn action() -> Value {
        json!({"output": {"type": "object", "required": ["score"],
                          "properties": {"score": {"type": "number"}}},
               "async": {"callbackTimeoutSeconds": 60}})
    }

    #[test]
    fn a_valid_output_succeeds_and_is_recorded() {
        let attempted = read(
            answered(json!({"status": "ok", "output": {"score": 1}})),
            &action(),
            true,
        );
        assert_eq!(attempted.ended, Ended::Succeeded(json!({"score": 1})));
        let reached = attempted.reached.expect("recorded");
        assert_eq!((reached.status, reached.duration_ms), ("success", 4.0));
    }

    #[test]
    fn an_output_outside_the_schema_fails_before_the_run_sees_it() {
        let attempted = read(
            answered(json!({"status": "ok", "output": {"score": "high"}})),
            &action(),
            true,
        );
        assert!(matches!(
            attempted.ended,
            Ended::Failed { ref code, retryable: false, .. } if code == "bad_output"
        ));
        let reached = attempted.reached.expect("recorded");
        assert_eq!(reached.status, "error");
        assert!(reached.counts_against_circuit);
    }

    #[test]
    fn pending_is_only_an_answer_of_an_asynchronous_action_where_a_wait_is_allowed() {
        let pending = json!({"status": "pending", "externalId": "v-1"});
        let attempted = read(answered(pending.clone()), &action(), true);
        assert_eq!(attempted.ended, Ended::Pending("v-1".into()));
        assert_eq!(attempted.reached.expect("recorded").status, "pending");
        let in_a_rule = read(answered(pending.clone()), &action(), false);
        assert!(matches!(
            in_a_rule.ended,
            Ended::Failed {
                retryable: false,
                ..
            }
        ));
        let synchronous = read(answered(pending), &json!({}), true);
        assert!(matches!(synchronous.ended, Ended::Failed { .. }));
    }

    #[test]
    fn an_error_answer_is_retried_only_when_the_module_says_so() {
        let once = read(
            answered(json!({"status": "error", "message": "declined"})),
            &action(),
            true,
        );
        assert!(matches!(
            once.ended,
            Ended::Failed {
                retryable: false,
                ..
            }
        ));
        assert_eq!(
            once.reached.expect("recorded").error.as_deref(),
            Some("declined")
        );
        let again = read(
            answered(json!({"status": "error", "message": "vendor down", "retryable": true})),
            &action(),
            true,
        );
        assert!(matches!(
            again.ended,
            Ended::Failed {
                retryable: true,
                ..
            }
        ));
    }

    fn target(needs: Value) -> Target {
        Target {
            version_id: Uuid::now_v7(),
            version: "1.0.0".into(),
            publisher: None,
            sha256: "0".repeat(64),
            manifest: json!({"needs": needs, "actions": {"check": action()}}),
            config: json!({}),
            hosts: vec![],
            secrets: vec![],
            circuit: Circuit::Closed { failures: 0 },
        }
    }

    #[test]
    fn only_apps_that_need_documents_get_a_call_token_binding_tenant_call_and_subject() {
        let key = CallTokenKey::new(b"a-call-token-secret-of-at-least-32-bytes").expect("key");
        let input = json!({});
        let request = Request {
            call_id: Uuid::now_v7(),
            tenant: Uuid::now_v7(),
            subject: Some(Uuid::now_v7()),
            app: "docs",
            action: "check",
            input: &input,
            idempotency_key: "k",
            timeout: Duration::from_secs(1),
            may_pend: false,
            request_id: "r",
        };
        let documents = target(json!(["documents"]));
        let token = call_token(Some(&key), &documents, &request)
            .expect("minted")
            .expect("a token");
        let grant = key
            .verify(&token, &request.call_id.to_string())
            .expect("valid for its call");
        assert_eq!(
            (grant.tenant, grant.call, grant.subject),
            (request.tenant, request.call_id, request.subject)
        );
        assert_eq!(
            call_token(Some(&key), &target(json!([])), &request),
            Ok(None)
        );
        assert_eq!(call_token(None, &documents, &request), Ok(None));
    }

    #[test]
    fn runner_failures_are_recorded_when_the_module_ran() {
        let timeout = read(runner_failure(RunnerCode::Timeout), &action(), true);
        assert!(matches!(
            timeout.ended,
            Ended::Failed {
                retryable: true,
                ..
            }
        ));
        assert_eq!(timeout.reached.expect("recorded").status, "timeout");
        let bad = read(runner_failure(RunnerCode::InvalidModule), &action(), true);
        assert!(matches!(
            bad.ended,
            Ended::Failed {
                retryable: false,
                ..
            }
        ));
        assert!(bad.reached.expect("recorded").counts_against_circuit);
        for code in [
            RunnerCode::Busy,
            RunnerCode::Unreachable,
            RunnerCode::ModuleUnavailable,
            RunnerCode::Internal,
        ] {
            let away = read(runner_failure(code), &action(), true);
            assert!(away.reached.is_none(), "{code:?} never reached the install");
            assert!(matches!(
                away.ended,
                Ended::Failed {
                    retryable: true,
                    ..
                }
            ));
        }
        let refused = read(runner_failure(RunnerCode::BadRequest), &action(), true);
        assert!(refused.reached.is_none());
        assert!(matches!(
            refused.ended,
            Ended::Failed {
                retryable: false,
                ..
            }
        ));
    }
}
