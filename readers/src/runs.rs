//! Workflow runs (README "Definitions and runs"): one run with its context and each step it
//! reached, as `GET /workflow-runs/:id` and the runs stage's replies show it. Without
//! `runs:context` the caller sees the context's and the outputs' keys with every value
//! `[redacted]` ([`Run::redacted`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::redaction::redact_values;
use crate::{Error, Tenant};

/// A run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: Uuid,
    pub definition_key: String,
    pub definition_version: i32,
    pub subject_id: Option<Uuid>,
    /// `running`, `waiting_callback`, `completed`, `failed`, `cancelled`.
    pub status: String,
    pub context: Value,
    /// Why the run failed: the failure's name and the app and action (never a vendor's words).
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    #[sqlx(skip)]
    pub steps: Vec<Step>,
}

/// A step the run reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    /// `call_app` or `rule_set`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `running`, `waiting_callback`, `completed`, `failed`, `cancelled`.
    pub status: String,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Attempts of its app calls that reached an install (its invocation records).
    pub attempts: i32,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl Run {
    /// What a caller without `runs:context` sees.
    pub fn redacted(self) -> Self {
        Self {
            context: redact_values(self.context),
            steps: self
                .steps
                .into_iter()
                .map(|step| Step {
                    output: step.output.map(redact_values),
                    ..step
                })
                .collect(),
            ..self
        }
    }
}

/// The tenant's run `id`, with its steps in order.
pub async fn get(
    connection: &mut PgConnection,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Run>, Error> {
    let run: Option<Run> = sqlx::query_as(
        "SELECT id, definition_key, definition_version, subject_id, status, context, error, \
         created_by, created_at, updated_at, finished_at \
         FROM workflow_runs WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(mut run) = run else {
        return Ok(None);
    };
    run.steps = sqlx::query_as(
        "SELECT s.step_id AS id, s.type AS kind, s.status, s.output, s.error, \
         COALESCE((SELECT sum(c.invocations) FROM workflow_run_calls c \
                   WHERE c.run_id = s.run_id AND c.step_id = s.step_id), 0)::integer AS attempts, \
         s.started_at, s.finished_at \
         FROM workflow_run_steps s WHERE s.run_id = $1 ORDER BY s.position",
    )
    .bind(id)
    .fetch_all(&mut *connection)
    .await?;
    Ok(Some(run))
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
            status: "failed".into(),
            context: json!({"name": "Ada", "kyc": {"score": 0.2}}),
            error: Some("AppCallFailed: kyc check (timeout)".into()),
            created_by: "u".into(),
            created_at: now,
            updated_at: now,
            finished_at: None,
            steps: vec![Step {
                id: "kyc".into(),
                kind: "call_app".into(),
                status: "failed".into(),
                output: Some(json!({"score": 0.2})),
                error: Some("AppCallFailed: kyc check (timeout)".into()),
                attempts: 2,
                started_at: now,
                finished_at: None,
            }],
        };
        let shown = run.redacted();
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
