//! Workflow runs (docs/definitions-and-runs.md): one run with its context and each step it
//! reached, as `GET /workflow-runs/:id` and the runs stage's replies show it. Without
//! `runs:context` the caller sees the context's and the outputs' keys with every value
//! `[redacted]` ([`redacted`]).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use topics::runs::{Run, RunStatus, Step};
use uuid::Uuid;

use crate::redaction::redact_values;
use crate::row::{Label, row_of};
use crate::{Error, Tenant};

/// A row of `workflow_runs`; its steps are read apart.
#[derive(sqlx::FromRow)]
struct RunRow {
    id: Uuid,
    definition_key: String,
    definition_version: i32,
    subject_id: Option<Uuid>,
    status: Label<RunStatus>,
    context: Value,
    error: Option<String>,
    created_by: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

row_of! {
    /// A row of `workflow_run_steps`, with its calls' attempts counted.
    struct StepRow => Step {
        id: String,
        kind: String,
        status: Label<RunStatus>,
        output: Option<Value>,
        error: Option<String>,
        attempts: i32,
        started_at: DateTime<Utc>,
        finished_at: Option<DateTime<Utc>>,
    }
}

/// What a caller without `runs:context` sees of `run`.
pub fn redacted(run: Run) -> Run {
    Run {
        context: redact_values(run.context),
        steps: run
            .steps
            .into_iter()
            .map(|step| Step {
                output: step.output.map(redact_values),
                ..step
            })
            .collect(),
        ..run
    }
}

/// The tenant's run `id`, with its steps in order.
pub async fn get(
    connection: &mut PgConnection,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Run>, Error> {
    let run: Option<RunRow> = sqlx::query_as(
        "SELECT id, definition_key, definition_version, subject_id, status, context, error, \
         created_by, created_at, updated_at, finished_at \
         FROM workflow_runs WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(run) = run else {
        return Ok(None);
    };
    let steps: Vec<StepRow> = sqlx::query_as(
        "SELECT s.step_id AS id, s.type AS kind, s.status, s.output, s.error, \
         COALESCE((SELECT sum(c.invocations) FROM workflow_run_calls c \
                   WHERE c.run_id = s.run_id AND c.step_id = s.step_id), 0)::integer AS attempts, \
         s.started_at, s.finished_at \
         FROM workflow_run_steps s WHERE s.run_id = $1 ORDER BY s.position",
    )
    .bind(id)
    .fetch_all(&mut *connection)
    .await?;
    Ok(Some(Run {
        id: run.id,
        definition_key: run.definition_key,
        definition_version: run.definition_version,
        subject_id: run.subject_id,
        status: run.status.0,
        context: run.context,
        error: run.error,
        created_by: run.created_by,
        created_at: run.created_at,
        updated_at: run.updated_at,
        finished_at: run.finished_at,
        steps: steps.into_iter().map(Step::from).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn redaction_hides_context_and_output_values_and_keeps_errors_and_keys() {
        let now = Utc::now();
        let run = Run {
            id: Uuid::nil(),
            definition_key: "onboarding".into(),
            definition_version: 1,
            subject_id: None,
            status: RunStatus::Failed,
            context: json!({"name": "Ada", "kyc": {"score": 0.2}}),
            error: Some("AppCallFailed: kyc check (timeout)".into()),
            created_by: "u".into(),
            created_at: now,
            updated_at: now,
            finished_at: None,
            steps: vec![Step {
                id: "kyc".into(),
                kind: "call_app".into(),
                status: RunStatus::Failed,
                output: Some(json!({"score": 0.2})),
                error: Some("AppCallFailed: kyc check (timeout)".into()),
                attempts: 2,
                started_at: now,
                finished_at: None,
            }],
        };
        let shown = redacted(run);
        assert_eq!(
            shown.context,
            json!({"name": "[redacted]", "kyc": {"score": "[redacted]"}})
        );
        assert_eq!(shown.steps[0].output, Some(json!({"score": "[redacted]"})));
        assert_eq!(
            shown.error.as_deref(),
            Some("AppCallFailed: kyc check (timeout)")
        );
    }
}
