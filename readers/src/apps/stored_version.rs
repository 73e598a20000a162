//! What a version stored at upload holds and never changes: its module, publisher and manifest
//! (only its status and the dates beside it move, and they are not here). A reader may keep what
//! this answers for as long as it likes: the vendor webhook and hand-off routes run a session's
//! module with it, and an install checks its config against the manifest's `configSchema`.

use serde_json::Value;
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::Error;

/// A version as stored at upload.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredVersion {
    pub id: Uuid,
    /// The publishing tenant: `None` for the platform's own.
    pub publisher: Option<Uuid>,
    pub version: String,
    pub sha256: String,
    /// The manifest as uploaded (defaults not filled in).
    pub manifest: Value,
}

/// The version `id`, whoever published it: the caller found the id through a read that starts
/// from its tenant (a session, [`super::versions::is_visible`]).
pub async fn get(executor: impl PgExecutor<'_>, id: Uuid) -> Result<Option<StoredVersion>, Error> {
    Ok(sqlx::query_as(
        "SELECT id, tenant_id AS publisher, version, sha256, manifest FROM app_versions \
         WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(executor)
    .await?)
}
