//! The versions callback sessions run, read once per version: a version never changes after
//! upload, so an entry is never stale, and a webhook then reads from the database only what
//! can change (the session, the install and its secrets). Without this every webhook read its
//! version's whole manifest again and parsed it into JSON.

use std::sync::Arc;

use readers::callbacks::session_version::{self, SessionVersion};
use sqlx::PgPool;
use uuid::Uuid;

use crate::error::Error;

/// Versions remembered at once (a manifest is a few KiB).
const CAPACITY: u64 = 10_000;

/// The versions of callback sessions by id.
#[derive(Debug)]
pub(crate) struct SessionVersions(moka::sync::Cache<Uuid, Arc<SessionVersion>>);

impl Default for SessionVersions {
    fn default() -> Self {
        Self(moka::sync::Cache::new(CAPACITY))
    }
}

impl SessionVersions {
    /// The version `id` a session names. Versions are withdrawn, never deleted, and the
    /// session was found through its version, so one missing is an inconsistency, not a 404.
    pub(crate) async fn get(&self, pool: &PgPool, id: Uuid) -> Result<Arc<SessionVersion>, Error> {
        if let Some(version) = self.0.get(&id) {
            return Ok(version);
        }
        let version = session_version::get(pool, id)
            .await?
            .map(Arc::new)
            .ok_or_else(|| {
                Error::Internal(format!("a session names version {id}, which is gone"))
            })?;
        self.0.insert(id, version.clone());
        Ok(version)
    }
}
