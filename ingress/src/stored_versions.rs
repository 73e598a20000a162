//! Versions as stored at upload, read once per version: that part of a version never changes,
//! so an entry is never stale. A webhook then reads from the database only what can change (the
//! session, the install and its secrets), an install only whether its tenant sees the version.
//! Without this every webhook and every install read the version's whole manifest again and
//! parsed it into JSON (more than half an install's instructions in the API).

use std::sync::Arc;

use readers::apps::stored_version::{self, StoredVersion};
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::Error;

/// Bytes of manifests remembered at once: a manifest is a few KiB, and may be as large as the
/// runner lets a module answer (1 MiB), so the cache is bounded by what it holds, not by count
/// (an admin can fill it with installs of their own unpublished versions, which answer 409).
const CAPACITY_BYTES: u64 = 64 * 1024 * 1024;

/// Stored versions by id.
#[derive(Debug)]
pub(crate) struct StoredVersions(moka::sync::Cache<Uuid, Arc<StoredVersion>>);

impl Default for StoredVersions {
    fn default() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(CAPACITY_BYTES)
                .weigher(|_, version: &Arc<StoredVersion>| weight(version))
                .build(),
        )
    }
}

impl StoredVersions {
    /// The version `id` a session or an install names. Versions are withdrawn, never deleted,
    /// and the caller found the id through its tenant's records, so one missing is an
    /// inconsistency, not a 404.
    pub(crate) async fn get(&self, pool: &PgPool, id: Uuid) -> Result<Arc<StoredVersion>, Error> {
        if let Some(version) = self.0.get(&id) {
            return Ok(version);
        }
        let version = stored_version::get(pool, id)
            .await?
            .map(Arc::new)
            .ok_or_else(|| Error::Internal(format!("version {id} was named, and is gone")))?;
        self.0.insert(id, version.clone());
        Ok(version)
    }
}

/// What `version` weighs in the cache: its manifest's length as JSON, and its strings.
fn weight(version: &StoredVersion) -> u32 {
    let manifest = serde_json::to_vec(&version.manifest).map_or(0, |bytes| bytes.len());
    let total = manifest + version.version.len() + version.sha256.len() + 64;
    u32::try_from(total).unwrap_or(u32::MAX)
}
