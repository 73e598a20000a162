//! `BreachSla`: an open case's SLA deadline passed. Recorded once (`sla_breached_at`, audit
//! `case.sla.breached` by the system); a case decided in time, or already marked, is left as
//! it is and answered.

use readers::cases::Case;
use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::cases::Command;
use topics::{Envelope, Outcome};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    case_id: Uuid,
) -> Result<Outcome<Case>, Error> {
    let breached: Option<(String, String)> = sqlx::query_as(
        "UPDATE cases SET sla_breached_at = now() \
         WHERE tenant_id = $1 AND id = $2 AND status = 'open' AND sla_breached_at IS NULL \
           AND sla_due_at <= now() \
         RETURNING type, priority",
    )
    .bind(tenant.id())
    .bind(case_id)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some((case_type, priority)) = breached {
        let event = AuditEvent {
            action: "case.sla.breached",
            subject_type: "case",
            subject_id: case_id.to_string(),
            payload: json!({ "caseId": case_id, "type": case_type, "priority": priority }),
        };
        audit::record(tx, command, event).await?;
    }
    super::answer(tx, tenant, case_id).await
}
