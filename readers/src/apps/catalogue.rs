//! The catalogue (`GET /apps`, `GET /apps/:name`): one entry per app name the tenant sees,
//! platform apps and its own, with the tenant's install.

use serde::Serialize;
use serde_json::Value;
// Dynamic SQL here is only ever built from this module's constant texts.
use sqlx::AssertSqlSafe;
use sqlx::PgConnection;
use topics::apps::{Publisher, Version, VersionStatus};
use topics::installs::Installed;
use uuid::Uuid;

use super::installs;
use super::versions;
use super::{VISIBLE, Viewer, newest_first};
use crate::Error;

/// The version an entry describes the app by.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestVersion {
    pub id: Uuid,
    pub version: String,
    pub status: VersionStatus,
    pub publisher: Publisher,
}

/// One app name of the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogueEntry {
    pub name: String,
    /// From the newest published version (or the newest one seen when none is published).
    pub description: Option<String>,
    pub category: Option<String>,
    pub vendor: Option<String>,
    pub docs_url: Option<String>,
    pub publishers: Vec<Publisher>,
    pub latest_version: LatestVersion,
    /// How many versions the viewer sees.
    pub version_count: usize,
    /// The tenant's install, when there is one.
    pub install: Option<Installed>,
}

/// One app with every version the viewer sees (`GET /apps/:name`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppEntry {
    #[serde(flatten)]
    pub entry: CatalogueEntry,
    pub versions: Vec<Version>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Option<Uuid>,
    name: String,
    version: String,
    #[sqlx(try_from = "String")]
    status: VersionStatus,
    manifest: Value,
}

/// Every app name the viewer sees, by name.
pub async fn list(
    connection: &mut PgConnection,
    viewer: Viewer,
) -> Result<Vec<CatalogueEntry>, Error> {
    let sql = format!(
        "SELECT v.id, v.tenant_id, v.name, v.version, v.status, v.manifest FROM app_versions v \
         WHERE {VISIBLE} ORDER BY v.name"
    );
    let rows: Vec<Row> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(viewer.tenant.id())
        .bind(viewer.sees_uploaded)
        .fetch_all(&mut *connection)
        .await?;
    let mut entries = Vec::new();
    for group in rows.chunk_by(|a, b| a.name == b.name) {
        let install = installs::get(&mut *connection, viewer.tenant, &group[0].name).await?;
        entries.push(entry_of(group, install));
    }
    Ok(entries)
}

/// The app `name` as the viewer sees it; `None` when it sees no version of it.
pub async fn get(
    connection: &mut PgConnection,
    viewer: Viewer,
    name: &str,
) -> Result<Option<AppEntry>, Error> {
    let versions = versions::of_app(&mut *connection, viewer, name).await?;
    if versions.is_empty() {
        return Ok(None);
    }
    let rows: Vec<Row> = versions
        .iter()
        .map(|v| Row {
            id: v.id,
            tenant_id: (v.publisher == Publisher::Tenant).then(|| viewer.tenant.id()),
            name: v.app_name.clone(),
            version: v.version.clone(),
            status: v.status,
            manifest: v.manifest.clone(),
        })
        .collect();
    let install = installs::get(&mut *connection, viewer.tenant, name).await?;
    Ok(Some(AppEntry {
        entry: entry_of(&rows, install),
        versions,
    }))
}

/// The entry of one name's versions (never empty).
fn entry_of(rows: &[Row], install: Option<Installed>) -> CatalogueEntry {
    let latest = rows
        .iter()
        .filter(|r| r.status == VersionStatus::Published)
        .min_by(|a, b| newest_first(&a.version, &b.version))
        .or_else(|| {
            rows.iter()
                .min_by(|a, b| newest_first(&a.version, &b.version))
        })
        .unwrap_or(&rows[0]);
    let text = |field: &str| latest.manifest[field].as_str().map(str::to_owned);
    let mut publishers: Vec<Publisher> = Vec::new();
    for row in rows {
        let publisher = publisher_of(row);
        if !publishers.contains(&publisher) {
            publishers.push(publisher);
        }
    }
    CatalogueEntry {
        name: latest.name.clone(),
        description: text("description"),
        category: text("category"),
        vendor: text("vendor"),
        docs_url: text("docsUrl"),
        publishers,
        latest_version: LatestVersion {
            id: latest.id,
            version: latest.version.clone(),
            status: latest.status,
            publisher: publisher_of(latest),
        },
        version_count: rows.len(),
        install,
    }
}

fn publisher_of(row: &Row) -> Publisher {
    if row.tenant_id.is_some() {
        Publisher::Tenant
    } else {
        Publisher::Platform
    }
}
