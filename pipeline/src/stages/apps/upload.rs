//! `Upload`: a tenant's new version, `uploaded` (SPEC §3.1 first row). One version per tenant,
//! name and version number: a second is a `conflict`.

use sqlx::{Postgres, Transaction};
use topics::apps::{Command, Module};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::version_row;
use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    version_id: Uuid,
    name: &str,
    version: &str,
    module: &Module,
) -> Result<Outcome, Error> {
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
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("Version {version} of {name} was already uploaded."),
        ));
    }
    let mut payload = version_row::audit_payload(name, version, version_id);
    payload["sha256"] = module.sha256.clone().into();
    let event = AuditEvent {
        action: "app.uploaded",
        subject_type: "app_version",
        subject_id: version_id.to_string(),
        payload,
    };
    audit::record(tx, command, event).await?;
    version_row::answer(tx, Some(tenant), name, version_id).await
}
