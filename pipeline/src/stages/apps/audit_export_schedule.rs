//! `SetAuditExportSchedule`: a tenant's scheduled audit export (README "The audit log"),
//! replaced whole, with audit `audit_export.schedule.updated`. The first schedule starts
//! covering from the hour it was set; a later change keeps what was covered, so no window is
//! skipped or exported twice.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, AuditExportSchedule, Command};
use topics::{Envelope, Outcome};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    schedule: &AuditExportSchedule,
) -> Result<Outcome<Answer>, Error> {
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
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    let event = AuditEvent {
        action: "audit_export.schedule.updated",
        subject_type: "audit_export_schedule",
        subject_id: tenant.to_string(),
        payload: json!(schedule),
    };
    audit::record(tx, command, event).await?;
    let stored = readers::audit_exports::schedule(&mut **tx, readers::Tenant::new(tenant))
        .await?
        .ok_or_else(|| Error::Invalid("the schedule just stored is not there".into()))?;
    Ok(Outcome::done(Answer::AuditExportSchedule(stored)))
}
