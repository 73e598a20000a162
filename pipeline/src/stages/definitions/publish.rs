//! `Publish`: one of the key's versions becomes the one runs use, after the [`checks`] of what
//! it calls: warnings (`unknown_app`, `app_disabled`, ...) are answered beside the published
//! version; an app rule calling an asynchronous action refuses the publish (400) before anything
//! is sent. The key's app calls are replaced by the version's (for `GET /apps/:name/usage`);
//! audit `<kind>.published`.
//!
//! [`checks`]: super::checks

use std::collections::BTreeSet;

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::definitions::{Answer, Body, Command, Kind, Published};
use topics::{Envelope, Outcome, RefusalCode};

use super::checks;
use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    kind: Kind,
    key: &str,
    version: i32,
) -> Result<Outcome<Answer>, Error> {
    let head: Option<Option<i32>> = sqlx::query_scalar(
        "SELECT published_version FROM definition_keys \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 FOR UPDATE",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(published) = head else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such definition.",
        ));
    };
    let Some(stored) =
        readers::definitions::version(&mut **tx, tenant, kind.as_str(), key, version).await?
    else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    if published == Some(version) {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("Version {version} is already the published one."),
        ));
    }
    let body = Body::parse(kind, stored.body)
        .map_err(|e| Error::Invalid(format!("a stored body that does not read: {e}")))?;
    let checked = checks::check(tx, tenant, &body).await?;
    if !checked.refusals.is_empty() {
        let issues: Vec<_> = checked.refusals.iter().map(checks::issue).collect();
        return Ok(Outcome::refused_with(
            RefusalCode::ValidationError,
            "The version cannot be published.",
            json!({ "issues": issues }),
        ));
    }
    sqlx::query(
        "UPDATE definition_versions SET published_at = now(), published_by = $5 \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 AND version = $4",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE definition_keys SET published_version = $4 \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .execute(&mut **tx)
    .await?;
    replace_app_calls(tx, tenant, kind, key, version, &body).await?;
    let event = AuditEvent {
        action: published_action(kind),
        subject_type: "definition",
        subject_id: format!("{}/{key}", kind.as_str()),
        payload: json!({ "kind": kind.as_str(), "key": key, "version": version, "previousVersion": published }),
    };
    audit::record(tx, command, event).await?;
    let definition = readers::definitions::version(&mut **tx, tenant, kind.as_str(), key, version)
        .await?
        .ok_or_else(|| Error::Invalid("the version just published is not there".into()))?;
    Ok(Outcome::done(Answer::Published(Published {
        definition,
        warnings: checked.warnings,
    })))
}

/// SPEC §6.1: `<kind>.published`.
fn published_action(kind: Kind) -> &'static str {
    match kind {
        Kind::Workflow => "workflow.published",
        Kind::Rule => "rule.published",
        Kind::RuleSet => "rule_set.published",
        Kind::CollectionFlow => "collection_flow.published",
    }
}

async fn replace_app_calls(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    kind: Kind,
    key: &str,
    version: i32,
    body: &Body,
) -> Result<(), Error> {
    sqlx::query("DELETE FROM definition_app_calls WHERE tenant_id = $1 AND kind = $2 AND key = $3")
        .bind(tenant.id())
        .bind(kind.as_str())
        .bind(key)
        .execute(&mut **tx)
        .await?;
    let calls: BTreeSet<(&str, &str)> = body
        .app_calls()
        .into_iter()
        .map(|call| (call.app, call.action))
        .collect();
    let (apps, actions): (Vec<&str>, Vec<&str>) = calls.into_iter().unzip();
    sqlx::query(
        "INSERT INTO definition_app_calls (tenant_id, app_name, kind, key, version, action) \
         SELECT $1, app, $3, $4, $5, action FROM unnest($2::text[], $6::text[]) AS c(app, action)",
    )
    .bind(tenant.id())
    .bind(&apps)
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .bind(&actions)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
