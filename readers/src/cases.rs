//! Cases (README "Cases"): one case, and a page of the tenant's newest.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// A case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    pub id: Uuid,
    #[serde(rename = "type")]
    pub case_type: String,
    pub title: String,
    pub subject_id: Option<Uuid>,
    /// `low`, `medium`, `high`, `critical`.
    pub priority: String,
    /// `open` or `decided`.
    pub status: String,
    pub sla_due_at: DateTime<Utc>,
    /// When the deadline passed with the case still open.
    pub sla_breached_at: Option<DateTime<Utc>>,
    /// `approved`, `rejected`, `no_action`; `null` while open.
    pub outcome: Option<String>,
    pub decision_comment: Option<String>,
    pub opened_by: String,
    pub opened_by_name: String,
    pub opened_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub workflow_run_id: Option<Uuid>,
    pub step_id: Option<String>,
}

const COLUMNS: &str = "id, type AS case_type, title, subject_id, priority, status, sla_due_at, \
    sla_breached_at, outcome, decision_comment, opened_by, opened_by_name, opened_at, \
    decided_by, decided_by_name, decided_at, workflow_run_id, step_id";

pub async fn get(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Case>, Error> {
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM cases WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?)
}

/// The tenant's cases, newest first; `open` narrows to open or decided ones.
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    open: Option<bool>,
    page: Page,
) -> Result<ListPage<Case>, Error> {
    let status = open.map(|open| if open { "open" } else { "decided" });
    let items = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM cases WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) \
         ORDER BY opened_at DESC, id DESC LIMIT $3 OFFSET $4"
    )))
    .bind(tenant.id())
    .bind(status)
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let counted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM cases WHERE tenant_id = $1 \
         AND ($2::text IS NULL OR status = $2) LIMIT 100001) AS capped",
    )
    .bind(tenant.id())
    .bind(status)
    .fetch_one(pool)
    .await?;
    Ok(ListPage::capped(items, counted))
}
