//! `SetApprovalSettings`: a tenant's approval settings (not shown in SPEC; docs/apps.md
//! "Approval settings"), replaced whole, with audit `approval_settings.updated`.

use serde_json::json;
use topics::Outcome;
use topics::settings::ApprovalSettings;
use topics::settings::SetApprovalSettings;

use super::SettingsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

applies!(SettingsStage: SetApprovalSettings => apply);

pub(crate) async fn apply(
    cx: &mut Context,
    settings: &SetApprovalSettings,
) -> Result<Outcome<ApprovalSettings>, Error> {
    let tenant = cx.tenant()?;
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
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    let event = AuditEvent {
        action: "approval_settings.updated",
        subject_type: "approval_settings",
        subject_id: tenant.to_string(),
        payload: json!(settings),
    };
    cx.audit(event);
    let stored = readers::approval_settings::get(&mut *cx.tx, readers::Tenant::new(tenant)).await?;
    Ok(Outcome::done(stored))
}
