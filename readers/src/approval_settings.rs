//! A tenant's approval settings (`GET /approval-settings`; not shown in SPEC, docs/apps.md
//! "Approval settings"): whether publishing needs another administrator's approval, for which
//! kinds, and whether the requester may approve their own request.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use topics::settings::ApprovalSettings;

use crate::{Error, Tenant};

#[derive(sqlx::FromRow)]
struct Row {
    required: bool,
    required_for: Option<Vec<String>>,
    four_eyes: bool,
    updated_by: String,
    updated_at: DateTime<Utc>,
}

pub async fn get(executor: impl PgExecutor<'_>, tenant: Tenant) -> Result<ApprovalSettings, Error> {
    let row: Option<Row> = sqlx::query_as(
        "SELECT required, required_for, four_eyes, updated_by, updated_at \
         FROM approval_settings WHERE tenant_id = $1",
    )
    .bind(tenant.id())
    .fetch_optional(executor)
    .await?;
    Ok(match row {
        Some(row) => ApprovalSettings {
            required: row.required,
            required_for: row.required_for,
            four_eyes: row.four_eyes,
            updated_by: Some(row.updated_by),
            updated_at: Some(row.updated_at),
        },
        None => ApprovalSettings::defaults(),
    })
}
