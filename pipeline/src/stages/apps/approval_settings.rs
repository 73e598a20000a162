//! `SetApprovalSettings`: a tenant's approval settings (not shown in SPEC; README "Approval
//! settings"), replaced whole, with audit `approval_settings.updated`.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, ApprovalSettings, Command};
use topics::{Envelope, Outcome};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    settings: &ApprovalSettings,
) -> Result<Outcome<Answer>, Error> {
    sqlx::query(
        "INSERT INTO approval_settings (tenant_id, required, required_for, four_eyes, updated_by, \
         updated_at) VALUES ($1, $2, $3, $4, $5, now()) \
         ON CONFLICT (tenant_id) DO UPDATE SET required = $2, required_for = $3, four_eyes = $4, \
         updated_by = $5, updated_at = now()",
    )
    .bind(tenant)
    .bind(settings.required)
    .bind(&settings.required_for)
    .bind(settings.four_eyes)
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    let event = AuditEvent {
        action: "approval_settings.updated",
        subject_type: "approval_settings",
        subject_id: tenant.to_string(),
        payload: json!(settings),
    };
    audit::record(tx, command, event).await?;
    let stored = readers::approval_settings::get(&mut **tx, readers::Tenant::new(tenant)).await?;
    Ok(Outcome::done(Answer::ApprovalSettings(stored)))
}
