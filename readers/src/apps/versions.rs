//! App versions as `GET /apps/:name/versions` shows them (newest first, manifest unfolded) and
//! as the lifecycle routes answer them.

use chrono::{DateTime, Utc};
use serde_json::Value;
// Dynamic SQL here is only ever built from this module's constant texts.
use sqlx::AssertSqlSafe;
use sqlx::PgExecutor;
use topics::apps::{OpenRequest, Publisher, Version, VersionStatus};
use uuid::Uuid;

use super::{VISIBLE, Viewer, newest_first};
use crate::Error;

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Option<Uuid>,
    name: String,
    version: String,
    sha256: String,
    size_bytes: i32,
    manifest: Value,
    #[sqlx(try_from = "String")]
    status: VersionStatus,
    uploaded_by: String,
    uploaded_at: DateTime<Utc>,
    published_at: Option<DateTime<Utc>>,
    withdrawn_at: Option<DateTime<Utc>>,
    request_id: Option<Uuid>,
    requested_by: Option<String>,
    requested_at: Option<DateTime<Utc>>,
}

const SELECT: &str = "SELECT v.id, v.tenant_id, v.name, v.version, v.sha256, v.size_bytes, \
     v.manifest, v.status, v.uploaded_by, v.uploaded_at, v.published_at, v.withdrawn_at, \
     r.id AS request_id, r.requested_by, r.requested_at \
     FROM app_versions v \
     LEFT JOIN app_approval_requests r ON r.version_id = v.id AND r.decision IS NULL";

impl From<Row> for Version {
    fn from(row: Row) -> Self {
        let approval_request = match (row.request_id, row.requested_by, row.requested_at) {
            (Some(id), Some(requested_by), Some(requested_at)) => Some(OpenRequest {
                id,
                requested_by,
                requested_at,
            }),
            _ => None,
        };
        Version {
            id: row.id,
            app_name: row.name,
            version: row.version,
            publisher: if row.tenant_id.is_some() {
                Publisher::Tenant
            } else {
                Publisher::Platform
            },
            status: row.status,
            sha256: row.sha256,
            size_bytes: i64::from(row.size_bytes),
            manifest: unfold(row.manifest),
            uploaded_by: row.uploaded_by,
            uploaded_at: row.uploaded_at,
            published_at: row.published_at,
            withdrawn_at: row.withdrawn_at,
            approval_request,
        }
    }
}

/// The manifest with its defaults: the typed manifest written back. A stored manifest was
/// checked when uploaded; one that no longer reads (a newer build's) is shown as stored.
pub fn unfold(manifest: Value) -> Value {
    match serde_json::from_value::<schema::manifest::Manifest>(manifest.clone()) {
        Ok(typed) => serde_json::to_value(typed).unwrap_or(manifest),
        Err(_) => manifest,
    }
}

/// The versions of `name` the viewer sees, newest first.
pub async fn of_app(
    executor: impl PgExecutor<'_>,
    viewer: Viewer,
    name: &str,
) -> Result<Vec<Version>, Error> {
    let sql = format!("{SELECT} WHERE {VISIBLE} AND v.name = $3");
    let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(viewer.tenant.id())
        .bind(viewer.sees_uploaded)
        .bind(name)
        .fetch_all(executor)
        .await?;
    let mut versions: Vec<Version> = rows.into_iter().map(Version::from).collect();
    versions.sort_by(|a, b| {
        newest_first(&a.version, &b.version).then(b.uploaded_at.cmp(&a.uploaded_at))
    });
    Ok(versions)
}

/// One version of `name` the viewer sees.
pub async fn get(
    executor: impl PgExecutor<'_>,
    viewer: Viewer,
    name: &str,
    id: Uuid,
) -> Result<Option<Version>, Error> {
    let sql = format!("{SELECT} WHERE {VISIBLE} AND v.name = $3 AND v.id = $4");
    let row: Option<Row> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(viewer.tenant.id())
        .bind(viewer.sees_uploaded)
        .bind(name)
        .bind(id)
        .fetch_optional(executor)
        .await?;
    Ok(row.map(Version::from))
}

/// Whether the viewer sees version `id` of `name`: what an install asks before it reads the
/// version's unchanging part from a cache ([`super::stored_version`]), since whether a tenant's
/// own version is seen follows its status, which moves.
pub async fn is_visible(
    executor: impl PgExecutor<'_>,
    viewer: Viewer,
    name: &str,
    id: Uuid,
) -> Result<bool, Error> {
    let sql = format!(
        "SELECT EXISTS (SELECT FROM app_versions v WHERE {VISIBLE} AND v.name = $3 AND v.id = $4)"
    );
    Ok(sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(viewer.tenant.id())
        .bind(viewer.sees_uploaded)
        .bind(name)
        .bind(id)
        .fetch_one(executor)
        .await?)
}

/// A platform version, whoever looks (the catalogue's own answers).
pub async fn platform(executor: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Version>, Error> {
    let sql = format!("{SELECT} WHERE v.tenant_id IS NULL AND v.id = $1");
    let row: Option<Row> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(executor)
        .await?;
    Ok(row.map(Version::from))
}
