//! `Install` (SPEC §3.4b): install, configure, upgrade, enable or disable. The version must be
//! published, or be the withdrawn version the install already runs; `enabled` needs every
//! secret the version names to hold a value (else `app_not_configured` with
//! `details.missingSecrets`). The approved hosts are the version's. The first install is audit
//! `app.installed`, every later change `app.configured`.

use serde_json::{Value, json};
use topics::apps::VersionStatus;
use topics::installs::{Install, Installed};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::InstallsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};
use crate::stages::version_lock;

/// What an install decides on: of its version's manifest only the declared secrets and hosts
/// (`manifest -> 'secrets'`, `-> 'hosts'`), never the whole document; and the install as it is.
#[derive(sqlx::FromRow)]
struct Version {
    #[sqlx(try_from = "String")]
    status: VersionStatus,
    declared_secrets: Option<Value>,
    hosts: Option<Value>,
    /// The names of the secrets stored for the install.
    stored: Vec<String>,
    /// The version the install runs, and whether it is enabled: `None` before the first
    /// install.
    running: Option<Uuid>,
    running_enabled: Option<bool>,
}

applies!(InstallsStage: Install => apply);

async fn apply(cx: &mut Context, install: &Install) -> Result<Outcome<Installed>, Error> {
    let tenant = cx.tenant()?;
    let Install {
        name,
        version_id,
        enabled,
        config,
    } = install;
    let (version_id, enabled) = (*version_id, *enabled);
    // A withdraw of this version waits for this install, so the two apply in order
    // (`version_lock`). The secrets stored for the install come along (the same key's commands
    // apply serially).
    version_lock::install(&mut cx.tx, version_id).await?;
    // The version and the install as it is, locked, in one round trip (a lateral sub-select
    // may lock the row it reads).
    let version: Option<Version> = sqlx::query_as(
        "SELECT v.status, v.manifest -> 'secrets' AS declared_secrets, \
           v.manifest -> 'hosts' AS hosts, \
           ARRAY(SELECT s.name FROM app_secrets s WHERE s.tenant_id = $3 AND s.app_name = $2) \
             AS stored, \
           i.version_id AS running, i.enabled AS running_enabled \
         FROM app_versions v \
         LEFT JOIN LATERAL (SELECT version_id, enabled FROM app_installs \
           WHERE tenant_id = $3 AND app_name = $2 FOR UPDATE) i ON true \
         WHERE v.id = $1 AND v.name = $2 AND (v.tenant_id IS NULL OR v.tenant_id = $3)",
    )
    .bind(version_id)
    .bind(name)
    .bind(tenant)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let Some(Version {
        status,
        declared_secrets,
        hosts,
        stored,
        running,
        running_enabled,
    }) = version
    else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    let current: Option<(Uuid, bool)> = running.zip(running_enabled);
    let runs_it = current.is_some_and(|(running, _)| running == version_id);
    let installable = match status {
        VersionStatus::Published => true,
        VersionStatus::Withdrawn => runs_it,
        VersionStatus::Uploaded => false,
    };
    if !installable {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("The version is {status}; only a published version can be installed."),
        ));
    }
    if enabled {
        let missing = readers::apps::installs::missing(declared_secrets.as_ref(), &stored);
        if !missing.is_empty() {
            return Ok(Outcome::refused_with(
                RefusalCode::AppNotConfigured,
                "Secrets have no value yet; store them or install with enabled: false.",
                json!({ "missingSecrets": missing }),
            ));
        }
    }
    let hosts: Vec<String> = hosts
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_str().map(str::to_owned))
        .collect();
    // The command's own time, not the transaction's (`now()`): commands applied in one batch
    // would otherwise share one `updatedAt`, and the install's changes lose their order.
    sqlx::query(
        "INSERT INTO app_installs (tenant_id, app_name, version_id, enabled, config, \
         approved_hosts, installed_by, installed_at, updated_by, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $7, clock_timestamp()) \
         ON CONFLICT (tenant_id, app_name) DO UPDATE SET version_id = $3, enabled = $4, \
         config = $5, approved_hosts = $6, updated_by = $7, updated_at = clock_timestamp()",
    )
    .bind(tenant)
    .bind(name)
    .bind(version_id)
    .bind(enabled)
    .bind(config)
    .bind(&hosts)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    let mut payload = json!({ "app": name, "versionId": version_id, "enabled": enabled });
    let action = match current {
        None => "app.installed",
        Some((previous, was_enabled)) => {
            payload["previousVersionId"] = json!(previous);
            payload["previouslyEnabled"] = json!(was_enabled);
            "app.configured"
        }
    };
    let event = AuditEvent {
        action,
        subject_type: "app_install",
        subject_id: name.to_owned(),
        payload,
    };
    cx.audit(event);
    let installed = super::answer(&mut cx.tx, tenant, name)
        .await?
        .ok_or_else(|| Error::Invalid("the install just written is not there".into()))?;
    Ok(Outcome::done(installed))
}
