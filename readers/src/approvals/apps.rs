//! Publish requests of a tenant's own app versions (`GET /apps/approvals?open=`): open ones
//! oldest first, decided ones newest decision first.

use chrono::{DateTime, Utc};
use serde::Serialize;
// Dynamic SQL here is only ever built from this module's constant texts.
use sqlx::AssertSqlSafe;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Error, ListPage, Page, Tenant};

/// One publish request.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AppApprovalRequest {
    pub id: Uuid,
    pub app_name: String,
    pub version_id: Uuid,
    pub version: String,
    pub requested_by: String,
    pub requested_by_name: String,
    pub requested_at: DateTime<Utc>,
    pub comment: Option<String>,
    pub decided_by: Option<String>,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decision: Option<String>,
    pub decision_comment: Option<String>,
}

/// Open requests (oldest first) or decided ones (newest decision first).
pub async fn list(
    pool: &PgPool,
    tenant: Tenant,
    open: bool,
    page: Page,
) -> Result<ListPage<AppApprovalRequest>, Error> {
    let (condition, order) = if open {
        ("r.decision IS NULL", "r.requested_at, r.id")
    } else {
        ("r.decision IS NOT NULL", "r.decided_at DESC, r.id DESC")
    };
    let sql = format!(
        "SELECT r.id, r.app_name, r.version_id, v.version, r.requested_by, r.requested_by_name, \
         r.requested_at, r.comment, r.decided_by, r.decided_by_name, r.decided_at, r.decision, \
         r.decision_comment \
         FROM app_approval_requests r JOIN app_versions v ON v.id = r.version_id \
         WHERE r.tenant_id = $1 AND {condition} ORDER BY {order} LIMIT $2 OFFSET $3"
    );
    let items: Vec<AppApprovalRequest> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(tenant.id())
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(pool)
        .await?;
    let total: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM app_approval_requests r WHERE r.tenant_id = $1 AND {condition}"
    )))
    .bind(tenant.id())
    .fetch_one(pool)
    .await?;
    Ok(ListPage {
        items,
        total,
        total_is_estimate: None,
    })
}
