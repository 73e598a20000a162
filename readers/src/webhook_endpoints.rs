//! Tenants' webhook endpoints (README "Outbound webhooks"): one, and the tenant's in the order
//! they were created. Never the signing secrets: those are shown once, when generated.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::{Error, Tenant};

/// An endpoint as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: Uuid,
    pub url: String,
    /// The event types it receives; empty: every type.
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub description: String,
    /// Until when the secret before the last rotation still signs (24 hours after it).
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The most endpoints one tenant may have.
pub const MAX_PER_TENANT: i64 = 50;

const COLUMNS: &str = "id, url, event_types, enabled, description, \
    CASE WHEN previous_expires_at > now() THEN previous_expires_at END \
      AS previous_secret_expires_at, \
    created_by, created_at, updated_at";

/// Endpoint `id` of `tenant`.
pub async fn get(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    id: Uuid,
) -> Result<Option<Endpoint>, Error> {
    let endpoint = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(endpoint)
}

/// Every endpoint of `tenant` (at most [`MAX_PER_TENANT`]), oldest first.
pub async fn list(executor: impl PgExecutor<'_>, tenant: Tenant) -> Result<Vec<Endpoint>, Error> {
    let endpoints = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY created_at, id"
    )))
    .bind(tenant.id())
    .fetch_all(executor)
    .await?;
    Ok(endpoints)
}
