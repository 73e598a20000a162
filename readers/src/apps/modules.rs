//! Which modules the runner may fetch (SPEC §7 `module_not_found`: "No published module of that
//! hash"): a hash is served while some version with it is published, or installed by some
//! tenant (an install keeps running a version after it is withdrawn).

use sqlx::PgPool;

use crate::Error;

pub async fn is_servable(pool: &PgPool, sha256: &str) -> Result<bool, Error> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM app_versions v WHERE v.sha256 = $1 AND \
         (v.status = 'published' OR EXISTS (SELECT 1 FROM app_installs i WHERE i.version_id = v.id)))",
    )
    .bind(sha256)
    .fetch_one(pool)
    .await?)
}
