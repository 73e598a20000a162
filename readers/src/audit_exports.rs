//! Scheduled audit exports (docs/cases-activity-audit.md "The audit log"): a tenant's schedule and
//! its runs, newest first.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, PgPool};
use topics::settings::{AuditExportSchedule, ExportFormat};
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// A row of `audit_export_schedules`.
#[derive(sqlx::FromRow)]
struct ScheduleRow {
    enabled: bool,
    interval_hours: i32,
    #[sqlx(try_from = "String")]
    format: ExportFormat,
    covered_until: Option<DateTime<Utc>>,
    updated_by: String,
    updated_at: DateTime<Utc>,
}

/// One run: a window written to object storage, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: Uuid,
    pub window_from: DateTime<Utc>,
    pub window_to: DateTime<Utc>,
    pub format: String,
    /// `succeeded` or `failed`.
    pub status: String,
    pub rows: i64,
    pub bytes: i64,
    /// Where the file is, in the deployment's bucket.
    pub object_key: Option<String>,
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
}

/// The tenant's schedule, when it set one.
pub async fn schedule(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
) -> Result<Option<AuditExportSchedule>, Error> {
    let row: Option<ScheduleRow> = sqlx::query_as(
        "SELECT enabled, interval_hours, format, covered_until, updated_by, updated_at \
         FROM audit_export_schedules WHERE tenant_id = $1",
    )
    .bind(tenant.id())
    .fetch_optional(executor)
    .await?;
    Ok(row.map(|row| AuditExportSchedule {
        enabled: row.enabled,
        interval_hours: row.interval_hours,
        format: row.format,
        covered_until: row.covered_until,
        updated_by: Some(row.updated_by),
        updated_at: Some(row.updated_at),
    }))
}

/// The tenant's runs, newest first.
pub async fn runs(pool: &PgPool, tenant: Tenant, page: Page) -> Result<ListPage<Run>, Error> {
    let items = sqlx::query_as(
        "SELECT id, window_from, window_to, format, status, rows, bytes, object_key, error, \
         started_at, finished_at FROM audit_export_runs WHERE tenant_id = $1 \
         ORDER BY started_at DESC, id DESC LIMIT $2 OFFSET $3",
    )
    .bind(tenant.id())
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let total = sqlx::query_scalar("SELECT count(*) FROM audit_export_runs WHERE tenant_id = $1")
        .bind(tenant.id())
        .fetch_one(pool)
        .await?;
    Ok(ListPage {
        items,
        total,
        total_is_estimate: None,
    })
}
