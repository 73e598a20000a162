//! An app call of a run, driven from its stored state (`workflow_run_calls`) so that a
//! redelivered command, a timer or a restart picks it up where it stands:
//!
//! 1. the call's row is created on first sight with the step's deadline;
//! 2. a call that has ended answers how; a pending one ends as its callback session settled
//!    (an event, a forced uninstall), or times the session out once its deadline passed; one
//!    waiting for a retry's delay waits;
//! 3. otherwise one attempt goes out ([`attempt`](super::attempt)), outside any transaction;
//! 4. its record commits ([`record`](super::record)) conditional on the attempt counters the
//!    attempt started from, so a crash between the runner's answer and the commit repeats the
//!    attempt (same idempotency key) and records it once, and a second consumer's copy of the
//!    same attempt records nothing.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use runner::client::RunnerClient;
use schema::module::Sha256;
use serde_json::Value;
use sqlx::PgPool;
use topics::call_token::CallTokenKey;
use topics::sealed::SecretKeys;
use tracing::Instrument;
use uuid::Uuid;

use super::attempt::{self, Ended, Keys, Request};
use super::circuit::{self, Admission};
use super::record::{self, Recorded};
use super::retry::{self, ActionPolicy, Attempts, Next};
use super::target;
use crate::Error;
use crate::history_changes::HistoryChanges;

/// What the runs stage calls apps with.
#[derive(Debug, Clone)]
pub(crate) struct Calls {
    pub(crate) pool: PgPool,
    pub(crate) runner: Option<RunnerClient>,
    pub(crate) secret_keys: Option<Arc<SecretKeys>>,
    /// Signs the call tokens of apps that need documents.
    pub(crate) call_tokens: Option<Arc<CallTokenKey>>,
    /// `WEBHOOK_PUBLIC_URL`, the base of the callback URLs calls are given.
    pub(crate) webhook_public_url: Option<Arc<str>>,
    pub(crate) blocked: Arc<[Sha256]>,
    /// Told of each invocation record written, once committed.
    pub(crate) history: HistoryChanges,
}

/// One app call of a run.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) run_id: Uuid,
    pub(crate) tenant: Uuid,
    pub(crate) subject_id: Option<Uuid>,
    pub(crate) step_id: &'a str,
    /// The step id for a `call_app` step, `<step id>/rules/<index>` for an app rule.
    pub(crate) key: String,
    pub(crate) app: &'a str,
    pub(crate) action: &'a str,
    pub(crate) input: Value,
    /// A `call_app` step: the step retries, and an asynchronous action may answer `pending`.
    pub(crate) is_step: bool,
    pub(crate) request_id: &'a str,
}

impl Call<'_> {
    /// The key every attempt of the call carries (SPEC §2.9 `idempotent`).
    pub(crate) fn idempotency_key(&self) -> String {
        format!("run:{}:step:{}", self.run_id, self.key)
    }
}

/// Where a call stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallState {
    Succeeded(Value),
    /// `error` names the failure and the app and action only (the vendor's words stay on the
    /// invocation record).
    Failed {
        error: String,
    },
    /// A retry's delay runs; a run timer resumes it.
    Waiting,
    /// The asynchronous action waits for its callback.
    Pending {
        external_id: String,
    },
}

/// A call's row as stored, with the database's clock.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct CallRow {
    pub(crate) status: String,
    pub(crate) step_attempt: i32,
    pub(crate) action_attempts: i32,
    pub(crate) invocations: i32,
    pub(crate) deadline_at: DateTime<Utc>,
    pub(crate) next_attempt_at: Option<DateTime<Utc>>,
    pub(crate) output: Option<Value>,
    pub(crate) error: Option<String>,
    pub(crate) session_id: Option<Uuid>,
    pub(crate) external_id: Option<String>,
    /// The callback session's status, output and error, once the call is pending.
    pub(crate) session_status: Option<String>,
    pub(crate) session_output: Option<Value>,
    pub(crate) session_error: Option<String>,
    pub(crate) now: DateTime<Utc>,
}

impl Calls {
    /// Drives `call` as far as it goes now.
    pub(crate) async fn drive(&self, call: &Call<'_>) -> Result<CallState, Error> {
        loop {
            let row = self.row(call).await?;
            match row.status.as_str() {
                "succeeded" => return Ok(CallState::Succeeded(row.output.unwrap_or_default())),
                "failed" | "cancelled" => {
                    return Ok(CallState::Failed {
                        error: row.error.unwrap_or_default(),
                    });
                }
                "pending" if row.session_status.as_deref() != Some("pending") => {
                    record::settled(&self.pool, call, &row).await?;
                    continue;
                }
                "pending" if row.deadline_at <= row.now => {
                    record::time_out(&self.pool, call, &row).await?;
                    continue;
                }
                "pending" => {
                    return Ok(CallState::Pending {
                        external_id: row.external_id.unwrap_or_default(),
                    });
                }
                _ => {}
            }
            if row.next_attempt_at.is_some_and(|at| at > row.now) {
                record::keep_timer(&self.pool, call, &row).await?;
                return Ok(CallState::Waiting);
            }
            self.attempt(call, &row).await?;
        }
    }

    /// The call's row, created on first sight (the drive loop reads it after every attempt,
    /// so only the first read pays for the insert).
    async fn row(&self, call: &Call<'_>) -> Result<CallRow, Error> {
        if let Some(row) = self.stored_row(call).await? {
            return Ok(row);
        }
        sqlx::query(
            "INSERT INTO workflow_run_calls (run_id, call_key, step_id, app_name, action, status, \
             deadline_at) \
             VALUES ($1, $2, $6, $3, $4, 'running', now() + make_interval(secs => $5)) \
             ON CONFLICT (run_id, call_key) DO NOTHING",
        )
        .bind(call.run_id)
        .bind(&call.key)
        .bind(call.app)
        .bind(call.action)
        .bind(retry::STEP_DEADLINE.as_secs_f64())
        .bind(call.step_id)
        .execute(&self.pool)
        .await?;
        self.stored_row(call).await?.ok_or_else(|| {
            Error::Invalid(format!("call {} of run {} vanished", call.key, call.run_id))
        })
    }

    async fn stored_row(&self, call: &Call<'_>) -> Result<Option<CallRow>, Error> {
        Ok(sqlx::query_as(
            "SELECT c.status, c.step_attempt, c.action_attempts, c.invocations, c.deadline_at, \
             c.next_attempt_at, c.output, c.error, c.session_id, s.external_id, \
             s.status AS session_status, s.output AS session_output, \
             s.error AS session_error, clock_timestamp() AS now \
             FROM workflow_run_calls c LEFT JOIN app_callback_sessions s ON s.id = c.session_id \
             WHERE c.run_id = $1 AND c.call_key = $2",
        )
        .bind(call.run_id)
        .bind(&call.key)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// One attempt from `row`'s counters, and its record.
    async fn attempt(&self, call: &Call<'_>, row: &CallRow) -> Result<Recorded, Error> {
        let found = target::find(
            &self.pool,
            call.tenant,
            call.app,
            call.action,
            &self.blocked,
        )
        .await?;
        let target = match found {
            Ok(target) => target,
            Err(refused) => {
                let failure = format!("{}: {}", refused.code, refused.message);
                return record::refused(&self.pool, call, row, &failure).await;
            }
        };
        let action = target.action(call.action);
        if let Err(issues) = schema::strict::validate(&action["input"], &call.input, "/input") {
            let failure = format!(
                "validation_error: the input does not match the action's input schema: {}",
                attempt::describe(&issues)
            );
            return record::refused(&self.pool, call, row, &failure).await;
        }
        let policy = ActionPolicy::of(action);
        let left = (row.deadline_at - row.now).to_std().unwrap_or_default();
        if policy.timeout > left {
            let failure = "deadline: the step's deadline leaves no time for another attempt";
            return record::refused(&self.pool, call, row, failure).await;
        }
        let call_id = Uuid::now_v7();
        let idempotency_key = call.idempotency_key();
        let request = Request {
            call_id,
            tenant: call.tenant,
            subject: call.subject_id,
            app: call.app,
            action: call.action,
            input: &call.input,
            idempotency_key: &idempotency_key,
            timeout: policy.timeout,
            may_pend: call.is_step,
            request_id: call.request_id,
        };
        let span = tracing::info_span!(
            "app.invoke",
            otel.name = "app.invoke",
            svc.tenant_id = %call.tenant,
            svc.run_id = %call.run_id,
            svc.step_id = call.step_id,
            svc.app.name = call.app,
            svc.app.action = call.action,
            svc.app.attempt = row.invocations + 1,
            svc.app.call_id = %call_id,
            svc.app.idempotency_key = %idempotency_key,
            svc.app.outcome = tracing::field::Empty,
        );
        let admission = circuit::admit(&self.pool, call.tenant, call.app, target.circuit).await?;
        let (attempted, trial) = match admission {
            Admission::Refused => (circuit::refused(), false),
            Admission::Go { trial } => {
                let keys = Keys {
                    secrets: self.secret_keys.as_ref(),
                    call_tokens: self.call_tokens.as_deref(),
                    webhook_public_url: self.webhook_public_url.as_deref(),
                };
                let attempted = attempt::make(self.runner.as_ref(), keys, &target, &request)
                    .instrument(span.clone())
                    .await;
                (attempted, trial)
            }
        };
        let verdict = circuit::verdict(&attempted, target.circuit, trial);
        let attempts = Attempts {
            step_attempt: row.step_attempt,
            action_attempts: row.action_attempts + 1,
            step_retries: call.is_step,
        };
        let next = match &attempted.ended {
            Ended::Failed { retryable, .. } => {
                let spent = Duration::from_secs_f64(
                    attempted.reached.as_ref().map_or(0.0, |r| r.duration_ms) / 1000.0,
                );
                retry::after_failure(policy, attempts, *retryable, left.saturating_sub(spent))
            }
            _ => Next::GiveUp,
        };
        let callback_timeout = action["async"]["callbackTimeoutSeconds"].as_u64();
        let recorded = record::attempt(
            &self.pool,
            call,
            row,
            record::Attempt {
                call_id,
                version_id: target.version_id,
                idempotency_key: &idempotency_key,
                attempted: &attempted,
                next,
                callback_timeout: callback_timeout.map(Duration::from_secs),
                circuit: verdict.map(|verdict| (verdict, trial)),
            },
        )
        .instrument(span)
        .await?;
        if recorded == Recorded::Written && attempted.reached.is_some() {
            self.history.changed(call.tenant);
        }
        Ok(recorded)
    }
}
