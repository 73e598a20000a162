//! A tenant's install of an app (SPEC §2.10, §3.4b) as `PUT /apps/:name/install` answers it
//! and the catalogue shows it: with the secrets still missing and whether a newer version of
//! the same publisher is published.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, PgExecutor};
use topics::installs::Installed;
use uuid::Uuid;

use super::newest_first;
use crate::{Error, Tenant};

#[derive(sqlx::FromRow)]
struct Row {
    app_name: String,
    version_id: Uuid,
    version: String,
    /// The version's `manifest -> 'secrets'`: the manifest itself stays in the database.
    declared_secrets: Option<Value>,
    enabled: bool,
    config: Value,
    approved_hosts: Vec<String>,
    installed_by: String,
    installed_at: DateTime<Utc>,
    updated_by: String,
    updated_at: DateTime<Utc>,
    /// The names of the secrets stored for the install.
    stored: Vec<String>,
    /// The published versions of the same publisher's app.
    published: Vec<String>,
}

/// The tenant's install of `name`, when there is one, in one round trip (the stage answers
/// every install command with it).
pub async fn get(
    connection: &mut PgConnection,
    tenant: Tenant,
    name: &str,
) -> Result<Option<Installed>, Error> {
    let row: Option<Row> = sqlx::query_as(
        "SELECT i.app_name, i.version_id, v.version, v.manifest -> 'secrets' AS declared_secrets, \
         i.enabled, i.config, i.approved_hosts, i.installed_by, i.installed_at, i.updated_by, \
         i.updated_at, \
         ARRAY(SELECT s.name FROM app_secrets s \
               WHERE s.tenant_id = i.tenant_id AND s.app_name = i.app_name) AS stored, \
         ARRAY(SELECT p.version FROM app_versions p WHERE p.name = v.name \
               AND (p.tenant_id = v.tenant_id OR (p.tenant_id IS NULL AND v.tenant_id IS NULL)) \
               AND p.status = 'published') AS published \
         FROM app_installs i JOIN app_versions v ON v.id = i.version_id \
         WHERE i.tenant_id = $1 AND i.app_name = $2",
    )
    .bind(tenant.id())
    .bind(name)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let missing_secrets = missing(row.declared_secrets.as_ref(), &row.stored);
    let update_available = row
        .published
        .iter()
        .any(|v| newest_first(v, &row.version).is_lt());
    Ok(Some(Installed {
        app_name: row.app_name,
        version_id: row.version_id,
        version: row.version,
        enabled: row.enabled,
        config: row.config,
        approved_hosts: row.approved_hosts,
        missing_secrets,
        update_available,
        installed_by: row.installed_by,
        installed_at: row.installed_at,
        updated_by: row.updated_by,
        updated_at: row.updated_at,
    }))
}

/// A stored secret as sealed by the API (opened only by whoever calls the runner).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SealedSecret {
    pub name: String,
    pub key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

/// The sealed values the tenant stored for `name`.
pub async fn sealed_secrets(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    name: &str,
) -> Result<Vec<SealedSecret>, Error> {
    Ok(sqlx::query_as(
        "SELECT name, key_id, nonce, ciphertext FROM app_secrets          WHERE tenant_id = $1 AND app_name = $2 ORDER BY name",
    )
    .bind(tenant.id())
    .bind(name)
    .fetch_all(executor)
    .await?)
}

/// The secrets a manifest declares (its `secrets`, `None` when it has none) that are not in
/// `stored`, in the manifest's order. Readers select `manifest -> 'secrets'` rather than the
/// manifest: a few bytes instead of the whole document, and no parse of it.
pub fn missing(declared: Option<&Value>, stored: &[String]) -> Vec<String> {
    declared_names(declared)
        .filter(|name| !stored.iter().any(|s| s == name))
        .map(str::to_owned)
        .collect()
}

/// The secret names a manifest declares.
pub fn secret_names(manifest: &Value) -> impl Iterator<Item = &str> {
    declared_names(manifest.get("secrets"))
}

fn declared_names(declared: Option<&Value>) -> impl Iterator<Item = &str> {
    declared
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn missing_secrets_are_the_declared_ones_without_a_value() {
        let manifest = json!({"secrets": [{"name": "API_KEY"}, {"name": "WEBHOOK_SECRET"}]});
        let declared = manifest.get("secrets");
        assert_eq!(missing(declared, &[]), vec!["API_KEY", "WEBHOOK_SECRET"]);
        assert_eq!(
            missing(declared, &["WEBHOOK_SECRET".into(), "OLD".into()]),
            vec!["API_KEY"]
        );
        assert!(missing(None, &[]).is_empty());
        assert!(missing(Some(&json!("not a list")), &[]).is_empty());
        assert_eq!(
            secret_names(&manifest).collect::<Vec<_>>(),
            ["API_KEY", "WEBHOOK_SECRET"]
        );
    }
}
