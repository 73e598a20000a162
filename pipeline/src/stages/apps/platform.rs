//! The release's catalogue (SPEC §3.1, §9): `ReleasePlatform` publishes a platform version (no
//! tenant), or publishes again one a previous release withdrew; `RetirePlatform` withdraws one
//! the release no longer carries. Both are idempotent, as the API sends them at every start.

use serde_json::json;
use topics::apps::{ReleasePlatform, RetirePlatform, Version, VersionStatus};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::AppsStage;
use super::version_row::{self, Audited};
use crate::Error;
use crate::stage::{Context, applies};

applies!(AppsStage: ReleasePlatform => release);

applies!(AppsStage: RetirePlatform => retire);

async fn release(cx: &mut Context, command: &ReleasePlatform) -> Result<Outcome<Version>, Error> {
    let ReleasePlatform {
        version_id,
        name,
        version,
        module,
    } = command;
    let version_id = *version_id;
    let size = i32::try_from(module.size_bytes)
        .map_err(|_| Error::Invalid(format!("module of {} bytes", module.size_bytes)))?;
    let existing: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM app_versions WHERE tenant_id IS NULL AND name = $1 AND version = $2",
    )
    .bind(name)
    .bind(version)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let id = match existing {
        None => {
            sqlx::query(
                "INSERT INTO app_versions (id, tenant_id, name, version, sha256, size_bytes, \
                 manifest, status, uploaded_by, uploaded_at, published_at) \
                 VALUES ($1, NULL, $2, $3, $4, $5, $6, 'published', $7, now(), now())",
            )
            .bind(version_id)
            .bind(name)
            .bind(version)
            .bind(&module.sha256)
            .bind(size)
            .bind(&module.manifest)
            .bind(&cx.command.principal.id)
            .execute(&mut *cx.tx)
            .await?;
            let audited = Audited {
                name,
                version,
                id: version_id,
            };
            version_row::record(cx, "app.published", audited, json!({}));
            version_id
        }
        Some(id) => {
            let Some(row) = version_row::lock(&mut cx.tx, None, name, id).await? else {
                return Err(Error::Invalid(format!("platform version {id} vanished")));
            };
            if row.sha256 != module.sha256 {
                // A version is immutable: the release must bump the version number.
                return Ok(Outcome::refused(
                    RefusalCode::Conflict,
                    format!("Platform version {version} of {name} exists with another module."),
                ));
            }
            if row.status != VersionStatus::Published {
                version_row::set_status(&mut cx.tx, id, VersionStatus::Published).await?;
                let audited = Audited { name, version, id };
                version_row::record(cx, "app.published", audited, json!({}));
            }
            id
        }
    };
    version_row::answer(&mut cx.tx, None, name, id).await
}

async fn retire(cx: &mut Context, command: &RetirePlatform) -> Result<Outcome<Version>, Error> {
    let RetirePlatform { version_id, name } = command;
    let version_id = *version_id;
    let Some(row) = version_row::lock(&mut cx.tx, None, name, version_id).await? else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such platform version.",
        ));
    };
    if row.status == VersionStatus::Published {
        version_row::set_status(&mut cx.tx, version_id, VersionStatus::Withdrawn).await?;
        let audited = Audited {
            name,
            version: &row.version,
            id: version_id,
        };
        version_row::record(cx, "app.withdrawn", audited, json!({}));
    }
    version_row::answer(&mut cx.tx, None, name, version_id).await
}
