//! The tenant's user directory (docs/definitions-and-runs.md "The user directory"): every human and
//! machine subject the API has seen a verified token of, as its newest token described it. Activity
//! sentences and approval approvers take their names from here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, PgPool};

use crate::{Error, ListPage, Page, Tenant};

/// One person or service of the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// The token's `sub`.
    pub id: String,
    pub name: String,
    /// `human` or `machine`.
    pub kind: String,
    pub roles: Vec<String>,
    pub perms: Vec<String>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

const COLUMNS: &str = "subject AS id, name, kind, roles, perms, first_seen, last_seen";

/// A page of the directory, by name.
pub async fn list(pool: &PgPool, tenant: Tenant, page: Page) -> Result<ListPage<User>, Error> {
    let items = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM tenant_users WHERE tenant_id = $1 \
         ORDER BY name, subject LIMIT $2 OFFSET $3"
    )))
    .bind(tenant.id())
    .bind(page.limit)
    .bind(page.offset)
    .fetch_all(pool)
    .await?;
    let total = sqlx::query_scalar("SELECT count(*) FROM tenant_users WHERE tenant_id = $1")
        .bind(tenant.id())
        .fetch_one(pool)
        .await?;
    Ok(ListPage {
        items,
        total,
        total_is_estimate: None,
    })
}

/// The users whose newest token held the permission `perm` (by a role or by name), by name.
pub async fn holding(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    perm: &str,
) -> Result<Vec<User>, Error> {
    Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM tenant_users WHERE tenant_id = $1 AND $2 = ANY(perms) \
         ORDER BY name, subject"
    )))
    .bind(tenant.id())
    .bind(perm)
    .fetch_all(executor)
    .await?)
}
