//! `SetAuditExportSchedule`: a tenant's scheduled audit export (docs/cases-activity-audit.md "The
//! audit log"), replaced whole, with audit `audit_export.schedule.updated`. The first schedule
//! starts covering from the hour it was set; a later change keeps what was covered, so no window is
//! skipped or exported twice.

use serde_json::json;
use topics::Outcome;
use topics::settings::{AuditExportSchedule, SetAuditExportSchedule};

use super::SettingsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

applies!(SettingsStage: SetAuditExportSchedule => apply);

pub(crate) async fn apply(
    cx: &mut Context,
    schedule: &SetAuditExportSchedule,
) -> Result<Outcome<AuditExportSchedule>, Error> {
    let tenant = cx.tenant()?;
    sqlx::query(
        "INSERT INTO audit_export_schedules (tenant_id, enabled, interval_hours, format, \
         covered_until, updated_by, updated_at) \
         VALUES ($1, $2, $3, $4, date_trunc('hour', now()), $5, now()) \
         ON CONFLICT (tenant_id) DO UPDATE SET enabled = $2, interval_hours = $3, format = $4, \
         updated_by = $5, updated_at = now()",
    )
    .bind(tenant)
    .bind(schedule.enabled)
    .bind(schedule.interval_hours)
    .bind(schedule.format.as_str())
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    let event = AuditEvent {
        action: "audit_export.schedule.updated",
        subject_type: "audit_export_schedule",
        subject_id: tenant.to_string(),
        payload: json!(schedule),
    };
    cx.audit(event);
    let stored = readers::audit_exports::schedule(&mut *cx.tx, readers::Tenant::new(tenant))
        .await?
        .ok_or_else(|| Error::Invalid("the schedule just stored is not there".into()))?;
    Ok(Outcome::done(stored))
}
