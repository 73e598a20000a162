//! `usage` of an approval detail (SPEC §2.6): the tenant's published definitions that name the
//! key. Rules are named by rule sets and workflows (`{rule: key}` entries), rule sets by
//! workflow steps (`ruleSet`), workflows by collection flows (`workflow`); nothing names a
//! collection flow.

use serde::{Deserialize, Serialize};
use sqlx::PgExecutor;

use crate::{Error, Tenant};

/// A definition named, or naming (SPEC §2.6 `{kind, key, version?}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    pub kind: String,
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// An app's actions the version calls (apps only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
}

/// The published definitions whose published version names `key` of `kind`, by kind and key.
pub async fn of(
    executor: impl PgExecutor<'_>,
    tenant: Tenant,
    kind: &str,
    key: &str,
) -> Result<Vec<Reference>, Error> {
    // The JSON path each naming kind holds the key at; `$key` is bound, never spliced.
    let (kinds, path): (&[&str], &str) = match kind {
        "rule" => (&["rule_set", "workflow"], "$.**.rule ? (@ == $key)"),
        "rule_set" => (&["workflow"], "$.steps[*].ruleSet ? (@ == $key)"),
        "workflow" => (&["collection_flow"], "$.workflow ? (@ == $key)"),
        _ => return Ok(Vec::new()),
    };
    Ok(sqlx::query_as(
        "SELECT v.kind, v.key, v.version, NULL::text[] AS actions \
         FROM definition_keys k JOIN definition_versions v ON v.tenant_id = k.tenant_id \
              AND v.kind = k.kind AND v.key = k.key AND v.version = k.published_version \
         WHERE k.tenant_id = $1 AND k.kind = ANY($2) \
           AND jsonb_path_exists(v.body, $3::jsonpath, jsonb_build_object('key', $4::text)) \
         ORDER BY v.kind, v.key",
    )
    .bind(tenant.id())
    .bind(kinds)
    .bind(path)
    .bind(key)
    .fetch_all(executor)
    .await?)
}
