//! What running a session's module takes of the version that started it: the module, its
//! publisher (whose webhook route the callback URL names) and its manifest. A version never
//! changes after upload, so a reader may keep what this answers for as long as it likes.

use serde_json::Value;
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::Error;

/// The version a callback session runs.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SessionVersion {
    pub id: Uuid,
    /// The publishing tenant: `None` for the platform's own.
    pub publisher: Option<Uuid>,
    pub version: String,
    pub sha256: String,
    pub manifest: Value,
}

/// The version `id`, whoever published it (a session names it; the session was read for its
/// tenant already).
pub async fn get(executor: impl PgExecutor<'_>, id: Uuid) -> Result<Option<SessionVersion>, Error> {
    Ok(sqlx::query_as(
        "SELECT id, tenant_id AS publisher, version, sha256, manifest FROM app_versions \
         WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(executor)
    .await?)
}
