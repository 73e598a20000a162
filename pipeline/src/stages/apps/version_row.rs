//! The version row a transition changes, locked for the transaction, and the version as the
//! transition answers it.

use serde_json::{Value, json};
use sqlx::{Postgres, Transaction};
use topics::Outcome;
use topics::apps::{Version, VersionStatus};
use uuid::Uuid;

use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::Context;
use crate::stages::version_lock;

/// A version being changed.
#[derive(Debug)]
pub(super) struct VersionRow {
    pub(super) version: String,
    pub(super) sha256: String,
    pub(super) status: VersionStatus,
}

/// Locks the publisher's (`None`: the platform's) version `id` of app `name`, after the
/// installs reading its status committed (`version_lock`).
pub(super) async fn lock(
    tx: &mut Transaction<'_, Postgres>,
    publisher: Option<Uuid>,
    name: &str,
    id: Uuid,
) -> Result<Option<VersionRow>, Error> {
    version_lock::transition(tx, id).await?;
    let row: Option<(String, String, String)> = sqlx::query_as(
        "SELECT version, sha256, status FROM app_versions \
         WHERE tenant_id IS NOT DISTINCT FROM $1 AND name = $2 AND id = $3 FOR UPDATE",
    )
    .bind(publisher)
    .bind(name)
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.map(|(version, sha256, status)| {
        let status = VersionStatus::parse(&status)
            .ok_or_else(|| Error::Invalid(format!("version {id} has status {status:?}")))?;
        Ok(VersionRow {
            version,
            sha256,
            status,
        })
    })
    .transpose()
}

/// Sets the status of version `id` with its timestamp.
pub(super) async fn set_status(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    status: VersionStatus,
) -> Result<(), Error> {
    let sql = match status {
        VersionStatus::Published => {
            "UPDATE app_versions SET status = 'published', published_at = now(), withdrawn_at = NULL WHERE id = $1"
        }
        VersionStatus::Withdrawn => {
            "UPDATE app_versions SET status = 'withdrawn', withdrawn_at = now() WHERE id = $1"
        }
        VersionStatus::Uploaded => "UPDATE app_versions SET status = 'uploaded' WHERE id = $1",
    };
    sqlx::query(sql).bind(id).execute(&mut **tx).await?;
    Ok(())
}

/// The version as it now is, for the reply.
pub(super) async fn answer(
    tx: &mut Transaction<'_, Postgres>,
    publisher: Option<Uuid>,
    name: &str,
    id: Uuid,
) -> Result<Outcome<Version>, Error> {
    let version = match publisher {
        Some(tenant) => {
            let viewer = readers::apps::Viewer {
                tenant: readers::Tenant::new(tenant),
                sees_uploaded: true,
            };
            readers::apps::versions::get(&mut **tx, viewer, name, id).await
        }
        None => readers::apps::versions::platform(&mut **tx, id).await,
    }
    .map_err(Error::from)?;
    match version {
        Some(version) => Ok(Outcome::done(version)),
        None => Err(Error::Invalid(format!(
            "version {id} vanished in its own transaction"
        ))),
    }
}

/// The version an audit row is about.
#[derive(Debug, Clone, Copy)]
pub(super) struct Audited<'a> {
    pub(super) name: &'a str,
    pub(super) version: &'a str,
    pub(super) id: Uuid,
}

/// Records `action` on the version, its payload naming it, plus the fields of `extra`.
pub(super) fn record(cx: &mut Context, action: &'static str, version: Audited<'_>, extra: Value) {
    let mut payload =
        json!({ "app": version.name, "version": version.version, "versionId": version.id });
    if let (Some(payload), Value::Object(extra)) = (payload.as_object_mut(), extra) {
        payload.extend(extra);
    }
    let event = AuditEvent {
        action,
        subject_type: "app_version",
        subject_id: version.id.to_string(),
        payload,
    };
    cx.audit(event);
}
