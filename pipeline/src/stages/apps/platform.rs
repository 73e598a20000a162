//! The release's catalogue (SPEC §3.1, §9): `ReleasePlatform` publishes a platform version (no
//! tenant), or publishes again one a previous release withdrew; `RetirePlatform` withdraws one
//! the release no longer carries. Both are idempotent, as the API sends them at every start.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, Command, Module, VersionStatus};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::version_row::{self, Audited};
use crate::Error;

pub(super) async fn release(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    version_id: Uuid,
    name: &str,
    version: &str,
    module: &Module,
) -> Result<Outcome<Answer>, Error> {
    let size = i32::try_from(module.size_bytes)
        .map_err(|_| Error::Invalid(format!("module of {} bytes", module.size_bytes)))?;
    let existing: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM app_versions WHERE tenant_id IS NULL AND name = $1 AND version = $2",
    )
    .bind(name)
    .bind(version)
    .fetch_optional(&mut **tx)
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
            .bind(&command.principal.id)
            .execute(&mut **tx)
            .await?;
            let audited = Audited {
                name,
                version,
                id: version_id,
            };
            version_row::record(tx, command, "app.published", audited, json!({})).await?;
            version_id
        }
        Some(id) => {
            let Some(row) = version_row::lock(tx, None, name, id).await? else {
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
                version_row::set_status(tx, id, VersionStatus::Published).await?;
                let audited = Audited { name, version, id };
                version_row::record(tx, command, "app.published", audited, json!({})).await?;
            }
            id
        }
    };
    version_row::answer(tx, None, name, id).await
}

pub(super) async fn retire(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    version_id: Uuid,
    name: &str,
) -> Result<Outcome<Answer>, Error> {
    let Some(row) = version_row::lock(tx, None, name, version_id).await? else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such platform version.",
        ));
    };
    if row.status == VersionStatus::Published {
        version_row::set_status(tx, version_id, VersionStatus::Withdrawn).await?;
        let audited = Audited {
            name,
            version: &row.version,
            id: version_id,
        };
        version_row::record(tx, command, "app.withdrawn", audited, json!({})).await?;
    }
    version_row::answer(tx, None, name, version_id).await
}
