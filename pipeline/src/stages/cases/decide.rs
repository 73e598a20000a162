//! `Decide`: an open case decided with an outcome, once (a decided case is 409 `conflict`);
//! its SLA timer goes; audit `case.decided` with the type, priority, outcome and whether the
//! SLA was breached (never the title, which may name the subject).

use async_trait::async_trait;
use serde_json::json;
use topics::cases::Case;
use topics::cases::{CaseStatus, Decide};
use topics::{Applied, Apply, Outcome, RefusalCode};

use super::{CasesStage, Decided};
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::Context;

#[async_trait]
impl Apply<Decide, Context, Option<Decided>> for CasesStage {
    async fn apply(
        &self,
        cx: &mut Context,
        decide: &Decide,
    ) -> Result<Applied<Case, Option<Decided>>, Error> {
        apply(cx, decide).await
    }
}

async fn apply(cx: &mut Context, decide: &Decide) -> Result<Applied<Case, Option<Decided>>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let case_id = decide.case_id;
    let outcome = decide.outcome;
    let comment = decide.comment.as_deref();
    let found: Option<(String, String, String, bool, Option<String>)> = sqlx::query_as(
        "SELECT c.status, c.type, c.priority, c.sla_breached_at IS NOT NULL, r.definition_key \
         FROM cases c LEFT JOIN workflow_runs r \
           ON r.id = c.workflow_run_id AND r.tenant_id = c.tenant_id \
         WHERE c.tenant_id = $1 AND c.id = $2 FOR UPDATE OF c",
    )
    .bind(tenant.id())
    .bind(case_id)
    .fetch_optional(&mut *cx.tx)
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
    if CaseStatus::parse(&status) != Some(CaseStatus::Open) {
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
    .bind(&cx.command.principal.id)
    .bind(&cx.command.principal.name)
    .fetch_one(&mut *cx.tx)
    .await?;
    sqlx::query("DELETE FROM case_timers WHERE case_id = $1")
        .bind(case_id)
        .execute(&mut *cx.tx)
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
    cx.audit(event);
    let answer = super::answer(&mut cx.tx, tenant, case_id).await?;
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
