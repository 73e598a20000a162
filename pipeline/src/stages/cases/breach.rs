//! `BreachSla`: an open case's SLA deadline passed. Recorded once (`sla_breached_at`, audit
//! `case.sla.breached` by the system); a case decided in time, or already marked, is left as
//! it is and answered.

use async_trait::async_trait;
use serde_json::json;
use topics::cases::BreachSla;
use topics::cases::Case;
use topics::{Applied, Apply, Outcome};

use super::{CasesStage, Decided};
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::Context;

#[async_trait]
impl Apply<BreachSla, Context, Option<Decided>> for CasesStage {
    async fn apply(
        &self,
        cx: &mut Context,
        breach: &BreachSla,
    ) -> Result<Applied<Case, Option<Decided>>, Error> {
        let outcome = apply(cx, breach).await?;
        Ok(Applied {
            outcome,
            then: None,
        })
    }
}

async fn apply(cx: &mut Context, breach: &BreachSla) -> Result<Outcome<Case>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let case_id = breach.case_id;
    let breached: Option<(String, String)> = sqlx::query_as(
        "UPDATE cases SET sla_breached_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'open' AND sla_breached_at IS NULL \
           AND sla_due_at <= now() \
         RETURNING type, priority",
    )
    .bind(tenant.id())
    .bind(case_id)
    .fetch_optional(&mut *cx.tx)
    .await?;
    if let Some((case_type, priority)) = breached {
        let event = AuditEvent {
            action: "case.sla.breached",
            subject_type: "case",
            subject_id: case_id.to_string(),
            payload: json!({ "caseId": case_id, "type": case_type, "priority": priority }),
        };
        cx.audit(event);
    }
    super::answer(&mut cx.tx, tenant, case_id).await
}
