//! `Decide`: an open case decided with an outcome, once (a decided case is 409 `conflict`);
//! its SLA timer goes; audit `case.decided` with the type, priority, outcome and whether the
//! SLA was breached (never the title, which may name the subject).

use readers::cases::Case;
use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::cases::{Command, Outcome as CaseOutcome};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::Decided;
use crate::Error;
use crate::audit::{self, AuditEvent};
use crate::stage::Applied;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    case_id: Uuid,
    (outcome, comment): (CaseOutcome, Option<&str>),
) -> Result<Applied<Case, Option<Decided>>, Error> {
    let found: Option<(String, String, String, bool, Option<String>)> = sqlx::query_as(
        "SELECT c.status, c.type, c.priority, c.sla_breached_at IS NOT NULL, r.definition_key \
         FROM cases c LEFT JOIN workflow_runs r \
           ON r.id = c.workflow_run_id AND r.tenant_id = c.tenant_id \
         WHERE c.tenant_id = $1 AND c.id = $2 FOR UPDATE OF c",
    )
    .bind(tenant.id())
    .bind(case_id)
    .fetch_optional(&mut **tx)
    .await?;
    let refused = |outcome| Applied {
        outcome,
        then: None,
    };
    let Some((status, case_type, priority, breached, definition_key)) = found else {
        return Ok(refused(Outcome::refused(
            RefusalCode::NotFound,
            "No such case.",
        )));
    };
    if status != "open" {
        return Ok(refused(Outcome::refused(
            RefusalCode::Conflict,
            "The case is already decided.",
        )));
    }
    let seconds: f64 = sqlx::query_scalar(
        "UPDATE cases SET status = 'decided', outcome = $3, decision_comment = $4, \
         decided_by = $5, decided_by_name = $6, decided_at = now() \
         WHERE tenant_id = $1 AND id = $2 \
         RETURNING extract(epoch FROM decided_at - opened_at)::float8",
    )
    .bind(tenant.id())
    .bind(case_id)
    .bind(outcome.as_str())
    .bind(comment)
    .bind(&command.principal.id)
    .bind(&command.principal.name)
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM case_timers WHERE case_id = $1")
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    let event = AuditEvent {
        action: "case.decided",
        subject_type: "case",
        subject_id: case_id.to_string(),
        payload: json!({
            "caseId": case_id,
            "type": case_type,
            "priority": priority,
            "outcome": outcome.as_str(),
            "slaBreached": breached,
        }),
    };
    audit::record(tx, command, event).await?;
    let answer = super::answer(tx, tenant, case_id).await?;
    Ok(Applied {
        outcome: answer,
        then: Some(Decided {
            tenant: tenant.id(),
            case_type,
            seconds,
            outcome: outcome.as_str(),
            definition_key,
        }),
    })
}
