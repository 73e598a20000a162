//! `Open`: a case opened by `POST /cases`, with the timer of its SLA deadline.

use readers::cases::Case;
use sqlx::{Postgres, Transaction};
use topics::cases::{Command, Opening};
use topics::{Envelope, Outcome};
use uuid::Uuid;

use crate::Error;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    case_id: Uuid,
    opening: &Opening,
) -> Result<Outcome<Case>, Error> {
    sqlx::query(
        "INSERT INTO cases (id, tenant_id, type, title, subject_id, priority, status, sla_due_at, \
         opened_by, opened_by_name, opened_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8, $9, now())",
    )
    .bind(case_id)
    .bind(tenant.id())
    .bind(&opening.case_type)
    .bind(&opening.title)
    .bind(opening.subject_id)
    .bind(opening.priority.as_str())
    .bind(opening.sla_due_at)
    .bind(&command.principal.id)
    .bind(&command.principal.name)
    .execute(&mut **tx)
    .await?;
    sqlx::query("INSERT INTO case_timers (case_id, tenant_id, due_at) VALUES ($1, $2, $3)")
        .bind(case_id)
        .bind(tenant.id())
        .bind(opening.sla_due_at)
        .execute(&mut **tx)
        .await?;
    super::answer(tx, tenant, case_id).await
}
