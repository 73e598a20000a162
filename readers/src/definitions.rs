//! Versioned definitions (docs/definitions-and-runs.md): a key with its versions, one version
//! in full, the published version a run or a check uses, and which published definitions call
//! an app (`GET /apps/:name/usage`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};
use topics::definitions::{Kind, Version};

use crate::row::{Label, row_of};
use crate::{Error, Tenant};

row_of! {
    /// One version in full, as read.
    struct VersionRow => Version {
        kind: Label<Kind>,
        key: String,
        version: i32,
        body: Value,
        published: bool,
        created_by: String,
        created_at: DateTime<Utc>,
        published_at: Option<DateTime<Utc>>,
        published_by: Option<String>,
    }
}

/// A version as the key's list shows it (no body).
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct VersionSummary {
    pub version: i32,
    pub published: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
}

/// A key and its versions, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Definition {
    pub kind: String,
    pub key: String,
    pub latest_version: i32,
    pub published_version: Option<i32>,
    pub versions: Vec<VersionSummary>,
}

/// A published definition that calls an app, with the actions it calls.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub kind: String,
    pub key: String,
    pub version: i32,
    pub actions: Vec<String>,
}

/// The key with its versions, when the tenant has it.
pub async fn get(
    connection: &mut PgConnection,
    tenant: Tenant,
    kind: &str,
    key: &str,
) -> Result<Option<Definition>, Error> {
    let head: Option<(i32, Option<i32>)> = sqlx::query_as(
        "SELECT latest_version, published_version FROM definition_keys \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3",
    )
    .bind(tenant.id())
    .bind(kind)
    .bind(key)
    .fetch_optional(&mut *connection)
    .await?;
    let Some((latest_version, published_version)) = head else {
        return Ok(None);
    };
    let versions = sqlx::query_as(
        "SELECT version, (version = $4) AS published, created_by, created_at, published_at \
         FROM definition_versions WHERE tenant_id = $1 AND kind = $2 AND key = $3 \
         ORDER BY version DESC",
    )
    .bind(tenant.id())
    .bind(kind)
    .bind(key)
    .bind(published_version.unwrap_or(0))
    .fetch_all(&mut *connection)
    .await?;
    Ok(Some(Definition {
        kind: kind.to_owned(),
        key: key.to_owned(),
        latest_version,
        published_version,
        versions,
    }))
}

/// One version of the key.
pub async fn version<'c>(
    executor: impl PgExecutor<'c>,
    tenant: Tenant,
    kind: &str,
    key: &str,
    version: i32,
) -> Result<Option<Version>, Error> {
    let row: Option<VersionRow> = sqlx::query_as(
        "SELECT v.kind, v.key, v.version, v.body, \
         (k.published_version IS NOT DISTINCT FROM v.version) AS published, \
         v.created_by, v.created_at, v.published_at, v.published_by \
         FROM definition_versions v JOIN definition_keys k USING (tenant_id, kind, key) \
         WHERE v.tenant_id = $1 AND v.kind = $2 AND v.key = $3 AND v.version = $4",
    )
    .bind(tenant.id())
    .bind(kind)
    .bind(key)
    .bind(version)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Version::from))
}

/// The key's published version, when one is.
pub async fn published<'c>(
    executor: impl PgExecutor<'c>,
    tenant: Tenant,
    kind: &str,
    key: &str,
) -> Result<Option<Version>, Error> {
    let row: Option<VersionRow> = sqlx::query_as(
        "SELECT v.kind, v.key, v.version, v.body, true AS published, \
         v.created_by, v.created_at, v.published_at, v.published_by \
         FROM definition_keys k JOIN definition_versions v ON v.tenant_id = k.tenant_id \
              AND v.kind = k.kind AND v.key = k.key AND v.version = k.published_version \
         WHERE k.tenant_id = $1 AND k.kind = $2 AND k.key = $3",
    )
    .bind(tenant.id())
    .bind(kind)
    .bind(key)
    .fetch_optional(executor)
    .await?;
    Ok(row.map(Version::from))
}

/// The published definitions that call `app`, by kind and key.
pub async fn usage<'c>(
    executor: impl PgExecutor<'c>,
    tenant: Tenant,
    app: &str,
) -> Result<Vec<Usage>, Error> {
    Ok(sqlx::query_as(
        "SELECT kind, key, version, array_agg(action ORDER BY action) AS actions \
         FROM definition_app_calls WHERE tenant_id = $1 AND app_name = $2 \
         GROUP BY kind, key, version ORDER BY kind, key",
    )
    .bind(tenant.id())
    .bind(app)
    .fetch_all(executor)
    .await?)
}

/// The published version of each of `keys` (`(kind, key)`) that has one.
pub async fn published_versions<'c>(
    executor: impl PgExecutor<'c>,
    tenant: Tenant,
    keys: &[(&str, &str)],
) -> Result<Vec<(String, String, i32)>, Error> {
    let (kinds, names): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
    Ok(sqlx::query_as(
        "SELECT k.kind, k.key, k.published_version FROM definition_keys k \
         JOIN unnest($2::text[], $3::text[]) AS w(kind, key) USING (kind, key) \
         WHERE k.tenant_id = $1 AND k.published_version IS NOT NULL",
    )
    .bind(tenant.id())
    .bind(&kinds)
    .bind(&names)
    .fetch_all(executor)
    .await?)
}
