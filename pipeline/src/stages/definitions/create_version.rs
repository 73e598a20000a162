//! `CreateVersion`: the key's next version, numbered without gaps (this stage is the key's only
//! writer), not published. The first version creates the key.

use topics::Outcome;
use topics::definitions::{Body, CreateVersion, Version};

use super::DefinitionsStage;
use crate::Error;
use crate::stage::{Context, applies};

applies!(DefinitionsStage: CreateVersion => apply);

async fn apply(cx: &mut Context, create: &CreateVersion) -> Result<Outcome<Version>, Error> {
    let tenant = super::tenant(cx)?;
    let CreateVersion { kind, key, body } = create;
    let kind = *kind;
    // The API read the body as its kind; a body that does not read was not produced by it.
    Body::parse(kind, body.clone())
        .map_err(|e| Error::Invalid(format!("a {} body that does not read: {e}", kind.as_str())))?;
    let version: i32 = sqlx::query_scalar(
        "SELECT coalesce(max(version), 0) + 1 FROM definition_versions \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .fetch_one(&mut *cx.tx)
    .await?;
    sqlx::query(
        "INSERT INTO definition_versions (tenant_id, kind, key, version, body, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .bind(body)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    sqlx::query(
        "INSERT INTO definition_keys (tenant_id, kind, key, latest_version) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (tenant_id, kind, key) DO UPDATE SET latest_version = excluded.latest_version",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .execute(&mut *cx.tx)
    .await?;
    let created = readers::definitions::version(&mut *cx.tx, tenant, kind.as_str(), key, version)
        .await?
        .ok_or_else(|| Error::Invalid("the version just created is not there".into()))?;
    Ok(Outcome::done(created))
}
