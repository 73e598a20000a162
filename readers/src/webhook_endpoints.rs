//! Tenants' webhook endpoints (docs/outbound-webhooks.md): one, and the tenant's in the order
//! they were created. Never the signing secrets: those are shown once, when generated.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use topics::webhook_endpoints::Endpoint;
use uuid::Uuid;

use crate::row::row_of;
use crate::{Error, Tenant};

row_of! {
    /// A row of `webhook_endpoints`, its previous secret's expiry shown while it signs.
    struct EndpointRow => Endpoint {
        id: Uuid,
        url: String,
        event_types: Vec<String>,
        enabled: bool,
        description: String,
        previous_secret_expires_at: Option<DateTime<Utc>>,
        created_by: String,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
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
    let endpoint: Option<EndpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(endpoint.map(Endpoint::from))
}

/// Every endpoint of `tenant` (at most [`MAX_PER_TENANT`]), oldest first.
pub async fn list(executor: impl PgExecutor<'_>, tenant: Tenant) -> Result<Vec<Endpoint>, Error> {
    let endpoints: Vec<EndpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY created_at, id"
    )))
    .bind(tenant.id())
    .fetch_all(executor)
    .await?;
    Ok(endpoints.into_iter().map(Endpoint::from).collect())
}
