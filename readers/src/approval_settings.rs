//! A tenant's approval settings (`GET /approval-settings`; not shown in SPEC, README "Approval
//! settings"): whether publishing needs another administrator's approval, for which kinds, and
//! whether the requester may approve their own request.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgExecutor;

use crate::{Error, Tenant};

/// The settings, as stored or the defaults of a tenant that set none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalSettings {
    pub required: bool,
    /// `null`: every kind; else the kinds (`workflow`, `rule`, `rule_set`, `collection_flow`,
    /// `app`) that need approval when `required`.
    pub required_for: Option<Vec<String>>,
    pub four_eyes: bool,
    /// `null` until the tenant sets them.
    pub updated_by: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl ApprovalSettings {
    /// A tenant that set nothing: nothing needs approval; four-eyes on for when it does.
    pub fn defaults() -> Self {
        Self {
            required: false,
            required_for: None,
            four_eyes: true,
            updated_by: None,
            updated_at: None,
        }
    }

    /// Whether publishing `kind` (a definition kind, or `app`) opens an approval request
    /// (SPEC §3.1, §2.5): `required`, with `requiredFor` unset or naming the kind.
    pub fn needs_approval(&self, kind: &str) -> bool {
        self.required
            && self
                .required_for
                .as_ref()
                .is_none_or(|kinds| kinds.iter().any(|k| k == kind))
    }
}

#[derive(sqlx::FromRow)]
struct Row {
    required: bool,
    required_for: Option<Vec<String>>,
    four_eyes: bool,
    updated_by: String,
    updated_at: DateTime<Utc>,
}

pub async fn get(executor: impl PgExecutor<'_>, tenant: Tenant) -> Result<ApprovalSettings, Error> {
    let row: Option<Row> = sqlx::query_as(
        "SELECT required, required_for, four_eyes, updated_by, updated_at \
         FROM approval_settings WHERE tenant_id = $1",
    )
    .bind(tenant.id())
    .fetch_optional(executor)
    .await?;
    Ok(match row {
        Some(row) => ApprovalSettings {
            required: row.required,
            required_for: row.required_for,
            four_eyes: row.four_eyes,
            updated_by: Some(row.updated_by),
            updated_at: Some(row.updated_at),
        },
        None => ApprovalSettings::defaults(),
    })
}
