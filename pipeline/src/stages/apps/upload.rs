//! `Upload`: a tenant's new version, `uploaded` (SPEC §3.1 first row). One version per tenant,
//! name and version number: a second is a `conflict`.

use serde_json::json;
use topics::apps::{Upload, Version};
use topics::{Outcome, RefusalCode};

use super::AppsStage;
use super::version_row::{self, Audited};
use crate::Error;
use crate::stage::{Context, applies};

applies!(AppsStage: Upload => apply);

async fn apply(cx: &mut Context, upload: &Upload) -> Result<Outcome<Version>, Error> {
    let tenant = cx.tenant()?;
    let Upload {
        version_id,
        name,
        version,
        module,
    } = upload;
    let version_id = *version_id;
    let size = i32::try_from(module.size_bytes)
        .map_err(|_| Error::Invalid(format!("module of {} bytes", module.size_bytes)))?;
    let inserted = sqlx::query(
        "INSERT INTO app_versions (id, tenant_id, name, version, sha256, size_bytes, manifest, \
         status, uploaded_by, uploaded_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'uploaded', $8, now()) \
         ON CONFLICT (tenant_id, name, version) DO NOTHING",
    )
    .bind(version_id)
    .bind(tenant)
    .bind(name)
    .bind(version)
    .bind(&module.sha256)
    .bind(size)
    .bind(&module.manifest)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("Version {version} of {name} was already uploaded."),
        ));
    }
    let audited = Audited {
        name,
        version,
        id: version_id,
    };
    let extra = json!({ "sha256": module.sha256 });
    version_row::record(cx, "app.uploaded", audited, extra);
    version_row::answer(&mut cx.tx, Some(tenant), name, version_id).await
}
