//! What an attempt leaves behind, committed together after the runner answered: the call's new
//! state, the invocation record (SPEC §2.4) when the attempt reached the install, the callback
//! session of a `pending` answer, and the run timer of a retry's delay or a callback's
//! deadline. The update of the call is conditional on the counters the attempt started from:
//! when it matches nothing, another consumer recorded this attempt already and nothing is
//! written ([`Recorded::AlreadyRecorded`]).

use std::time::Duration;

use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::attempt::{Attempted, Ended, Reached};
use super::call::{Call, CallRow};
use super::retry::Next;
use crate::{Error, outbox};
use topics::circuits::{Event, Verdict};
use topics::{Envelope, Principal};

/// The error of a session a forced uninstall failed (SPEC §3.2), and of its call.
pub(crate) const UNINSTALLED: &str = "app_uninstalled";

/// Whether the attempt's record is the one that counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recorded {
    Written,
    AlreadyRecorded,
}

/// One attempt's result, for its record.
#[derive(Debug)]
pub(crate) struct Attempt<'a> {
    pub(crate) call_id: Uuid,
    pub(crate) version_id: Uuid,
    pub(crate) idempotency_key: &'a str,
    pub(crate) attempted: &'a Attempted,
    /// What follows a failure.
    pub(crate) next: Next,
    /// An asynchronous action's `callbackTimeoutSeconds`.
    pub(crate) callback_timeout: Option<Duration>,
    /// What to tell the app's circuit, and whether the attempt was its trial.
    pub(crate) circuit: Option<(Verdict, bool)>,
}

/// The call's state after the attempt.
struct NewState {
    status: &'static str,
    step_attempt: i32,
    action_attempts: i32,
    /// From now until the next attempt may start.
    next_after: Option<Duration>,
    /// From now until a pending call's callback times out.
    callback_after: Option<Duration>,
    session_id: Option<Uuid>,
    output: Option<Value>,
    error: Option<String>,
    /// The attempt reached the install (one more invocation record).
    reached: bool,
}

/// Records `attempt`, made from `row`'s counters.
pub(crate) async fn attempt(
    pool: &PgPool,
    call: &Call<'_>,
    row: &CallRow,
    attempt: Attempt<'_>,
) -> Result<Recorded, Error> {
    let state = new_state(call, row, &attempt);
    let mut tx = pool.begin().await?;
    let Some(due) = update(&mut tx, call, row, &state).await? else {
        tx.rollback().await?;
        return Ok(Recorded::AlreadyRecorded);
    };
    if let Some(reached) = &attempt.attempted.reached {
        insert_invocation(&mut tx, call, row, &attempt, reached).await?;
    }
    if let (Some(session_id), Ended::Pending(external_id)) =
        (state.session_id, &attempt.attempted.ended)
    {
        insert_session(&mut tx, call, &attempt, session_id, external_id).await?;
    }
    if let Some((verdict, trial)) = attempt.circuit {
        let event = Event::CallEnded {
            app: call.app.to_owned(),
            verdict,
            trial,
        };
        // The circuits stage's span continues the call's.
        let mut envelope = Envelope::new(
            Some(call.tenant),
            Principal::system("runs"),
            call.request_id,
            service::telemetry::traces::current_traceparent(),
            event,
        );
        // The attempt's id (its invocation record's) names its outcome: the circuits stage's
        // inbox knows a relayed copy by it, and an operator finds the outcome of an attempt.
        envelope.id = attempt.call_id;
        outbox::write(&mut tx, &envelope).await?;
    }
    if let Some(due) = due {
        let purpose = if state.session_id.is_some() {
            "callback_timeout"
        } else {
            "retry"
        };
        insert_timer(&mut tx, call, due, purpose).await?;
    }
    tx.commit().await?;
    observe(call, &attempt);
    Ok(Recorded::Written)
}

/// The call could not go to the install (not installed, not configured, blocked, an input
/// its schema rejects): it fails at once, with nothing recorded but the call's state.
pub(crate) async fn refused(
    pool: &PgPool,
    call: &Call<'_>,
    row: &CallRow,
    failure: &str,
) -> Result<Recorded, Error> {
    let state = NewState {
        status: "failed",
        step_attempt: row.step_attempt,
        action_attempts: row.action_attempts,
        next_after: None,
        callback_after: None,
        session_id: None,
        output: None,
        error: Some(format!(
            "AppCallFailed: {} {} ({failure})",
            call.app, call.action
        )),
        reached: false,
    };
    tracing::warn!(
        app = call.app,
        action = call.action,
        failure,
        "app call refused"
    );
    let mut tx = pool.begin().await?;
    let recorded = update(&mut tx, call, row, &state).await?;
    tx.commit().await?;
    Ok(match recorded {
        Some(_) => Recorded::Written,
        None => Recorded::AlreadyRecorded,
    })
}

/// A pending call whose callback deadline passed: its session becomes `timed_out` unless
/// something settled it first (an event, a forced uninstall; the session's row decides, so the
/// first wins). The call then ends from its session ([`settled`]).
pub(crate) async fn time_out(pool: &PgPool, call: &Call<'_>, row: &CallRow) -> Result<(), Error> {
    let waited: Option<f64> = sqlx::query_scalar(
        "UPDATE app_callback_sessions SET status = 'timed_out', completed_at = now() \
         WHERE id = $1 AND status = 'pending' \
         RETURNING extract(epoch FROM completed_at - created_at)::float8",
    )
    .bind(row.session_id)
    .fetch_optional(pool)
    .await?;
    if let Some(seconds) = waited {
        crate::stages::callbacks::observe_wait(
            call.tenant,
            call.app,
            call.action,
            "timed_out",
            seconds,
        );
    }
    Ok(())
}

/// A pending call whose session has settled ends as its session did: a completed event's
/// output becomes the call's; anything else fails it with an error that names only the app
/// and the action (the vendor's words stay on the session, SPEC §3.2).
pub(crate) async fn settled(pool: &PgPool, call: &Call<'_>, row: &CallRow) -> Result<(), Error> {
    let (app, action) = (call.app, call.action);
    let (status, output, error) = match row.session_status.as_deref() {
        Some("completed") => ("succeeded", row.session_output.clone(), None),
        Some("timed_out") => (
            "failed",
            None,
            Some(format!("CallbackTimeout: {app} {action}")),
        ),
        Some(_) if row.session_error.as_deref() == Some(UNINSTALLED) => (
            "failed",
            None,
            Some(format!("{UNINSTALLED}: {app} {action}")),
        ),
        _ => (
            "failed",
            None,
            Some(format!("AppCallbackFailed: {app} {action}")),
        ),
    };
    sqlx::query(
        "UPDATE workflow_run_calls SET status = $3, output = $4, error = $5 \
         WHERE run_id = $1 AND call_key = $2 AND status = 'pending'",
    )
    .bind(call.run_id)
    .bind(&call.key)
    .bind(status)
    .bind(&output)
    .bind(&error)
    .execute(pool)
    .await?;
    match &error {
        Some(error) => tracing::warn!(app, action, error, "callback session failed the call"),
        None => tracing::info!(app, action, "callback session completed the call"),
    }
    Ok(())
}

/// A call waiting for its retry has a timer to resume it: the one its record wrote, unless a
/// timer fired early by the broker's clock and was spent, in which case another is set.
pub(crate) async fn keep_timer(pool: &PgPool, call: &Call<'_>, row: &CallRow) -> Result<(), Error> {
    let traceparent = service::telemetry::traces::current_traceparent();
    sqlx::query(
        "INSERT INTO run_timers (id, tenant_id, run_id, due_at, purpose, traceparent) \
         SELECT $1, $2, $3, $4, 'retry', $5 \
         WHERE NOT EXISTS (SELECT 1 FROM run_timers WHERE run_id = $3)",
    )
    .bind(Uuid::now_v7())
    .bind(call.tenant)
    .bind(call.run_id)
    .bind(row.next_attempt_at)
    .bind(traceparent)
    .execute(pool)
    .await?;
    Ok(())
}

fn new_state(call: &Call<'_>, row: &CallRow, attempt: &Attempt<'_>) -> NewState {
    let mut state = NewState {
        status: "running",
        step_attempt: row.step_attempt,
        action_attempts: row.action_attempts + 1,
        next_after: None,
        callback_after: None,
        session_id: None,
        output: None,
        error: None,
        reached: attempt.attempted.reached.is_some(),
    };
    match &attempt.attempted.ended {
        Ended::Succeeded(output) => {
            state.status = "succeeded";
            state.output = Some(output.clone());
        }
        Ended::Pending(_) => {
            state.status = "pending";
            state.session_id = Some(Uuid::now_v7());
            state.callback_after = Some(attempt.callback_timeout.unwrap_or(Duration::ZERO));
        }
        Ended::Failed { code, .. } => match attempt.next {
            Next::Action { after } => state.next_after = Some(after),
            Next::Step { after } => {
                state.step_attempt += 1;
                state.action_attempts = 0;
                state.next_after = Some(after);
            }
            Next::GiveUp => {
                state.status = "failed";
                state.error = Some(format!(
                    "AppCallFailed: {} {} ({code})",
                    call.app, call.action
                ));
            }
        },
    }
    state
}

/// Moves the call to `state` if it still stands where `row` saw it; `None` when it does not.
/// `Some(due)`: when a timer must fire (a retry's delay, a callback's deadline).
async fn update(
    tx: &mut Transaction<'_, Postgres>,
    call: &Call<'_>,
    row: &CallRow,
    state: &NewState,
) -> Result<Option<Option<chrono::DateTime<chrono::Utc>>>, Error> {
    let moved: Option<(Option<chrono::DateTime<chrono::Utc>>,)> = sqlx::query_as(
        "UPDATE workflow_run_calls SET status = $5, step_attempt = $6, action_attempts = $7, \
         invocations = invocations + $8, \
         next_attempt_at = clock_timestamp() + make_interval(secs => $9), \
         deadline_at = COALESCE(clock_timestamp() + make_interval(secs => $10), deadline_at), \
         session_id = $11, output = $12, error = $13 \
         WHERE run_id = $1 AND call_key = $2 AND status = 'running' AND step_attempt = $3 \
           AND action_attempts = $4 \
         RETURNING CASE WHEN $10::float8 IS NOT NULL THEN deadline_at \
                        WHEN $9::float8 > 0 THEN next_attempt_at END",
    )
    .bind(call.run_id)
    .bind(&call.key)
    .bind(row.step_attempt)
    .bind(row.action_attempts)
    .bind(state.status)
    .bind(state.step_attempt)
    .bind(state.action_attempts)
    .bind(i32::from(state.reached))
    .bind(state.next_after.map(|d| d.as_secs_f64()))
    .bind(state.callback_after.map(|d| d.as_secs_f64()))
    .bind(state.session_id)
    .bind(&state.output)
    .bind(&state.error)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(moved.map(|(due,)| due))
}

async fn insert_invocation(
    tx: &mut Transaction<'_, Postgres>,
    call: &Call<'_>,
    row: &CallRow,
    attempt: &Attempt<'_>,
    reached: &Reached,
) -> Result<(), Error> {
    let usage = |name: &str| {
        reached
            .usage
            .as_ref()
            .and_then(|u| u[name].as_i64())
            .and_then(|n| i32::try_from(n).ok())
    };
    let counters = (
        usage("httpRequests"),
        usage("documentReads"),
        usage("logLines"),
    );
    // All three counters or none (the table's check).
    let counters = match counters {
        (Some(h), Some(d), Some(l)) => (Some(h), Some(d), Some(l)),
        _ => (None, None, None),
    };
    sqlx::query(
        "INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, subject_id, \
         workflow_run_id, input, output, status, error, duration_ms, invoked_at, \
         idempotency_key, attempt, usage_http_requests, usage_document_reads, usage_log_lines) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
                 clock_timestamp() - make_interval(secs => $12 / 1000.0), $13, $14, $15, $16, $17)",
    )
    .bind(attempt.call_id)
    .bind(call.tenant)
    .bind(call.app)
    .bind(attempt.version_id)
    .bind(call.action)
    .bind(call.subject_id)
    .bind(call.run_id)
    .bind(&call.input)
    .bind(&reached.output)
    .bind(reached.status)
    .bind(&reached.error)
    .bind(reached.duration_ms)
    .bind(attempt.idempotency_key)
    .bind(row.invocations + 1)
    .bind(counters.0)
    .bind(counters.1)
    .bind(counters.2)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The callback session (SPEC §2.3) of a `pending` answer, on the version that started it.
async fn insert_session(
    tx: &mut Transaction<'_, Postgres>,
    call: &Call<'_>,
    attempt: &Attempt<'_>,
    session_id: Uuid,
    external_id: &str,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, \
         external_id, workflow_run_id, step_id, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', now())",
    )
    .bind(session_id)
    .bind(call.tenant)
    .bind(call.app)
    .bind(attempt.version_id)
    .bind(call.action)
    .bind(external_id)
    .bind(call.run_id)
    .bind(call.step_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn insert_timer(
    tx: &mut Transaction<'_, Postgres>,
    call: &Call<'_>,
    due: chrono::DateTime<chrono::Utc>,
    purpose: &str,
) -> Result<(), Error> {
    // The resume continues the call's trace (a retry, a callback's deadline: seconds to hours).
    let traceparent = service::telemetry::traces::current_traceparent();
    sqlx::query(
        "INSERT INTO run_timers (id, tenant_id, run_id, due_at, purpose, traceparent) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(Uuid::now_v7())
    .bind(call.tenant)
    .bind(call.run_id)
    .bind(due)
    .bind(purpose)
    .bind(traceparent)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The attempt's span fields, log line (a warning for an error or a timeout) and
/// `svc.app.invocation.duration`. The line's `action` and `attempt` come from the `app.invoke`
/// span it is written in, as every other line of the attempt's does.
fn observe(call: &Call<'_>, attempt: &Attempt<'_>) {
    let Some(reached) = &attempt.attempted.reached else {
        tracing::warn!(app = call.app, "app call did not reach the install");
        return;
    };
    tracing::Span::current().record("svc.app.outcome", reached.status);
    if matches!(reached.status, "error" | "timeout") {
        tracing::warn!(
            app = call.app,
            status = reached.status,
            duration_ms = reached.duration_ms,
            "app call failed"
        );
    } else {
        tracing::info!(
            app = call.app,
            status = reached.status,
            duration_ms = reached.duration_ms,
            "app call answered"
        );
    }
    metrics::histogram!(
        "svc.app.invocation.duration",
        "tenant" => call.tenant.to_string(),
        "app" => call.app.to_owned(),
        "action" => call.action.to_owned(),
        "status" => reached.status,
    )
    .record(reached.duration_ms);
}
