//! `Publish`: one of the key's versions becomes the one runs use, after the [`checks`] of what
//! it calls: warnings (`unknown_app`, `app_disabled`, ...) are answered beside the version; an
//! app rule calling an asynchronous action refuses the publish (400). When the tenant's
//! approval settings require it for the kind, an approval request opens instead (audit
//! `definition.approval.requested`) and [`super::decide`] publishes on approval. A key has at
//! most one open request: a publish while one is open is 409 `conflict` naming it, so an
//! approver never approves a version other than the one they reviewed.
//!
//! [`checks`]: super::checks

use std::collections::BTreeSet;

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::definitions::{Body, Finding, Kind, Publish, PublishReply, Published, Requested};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::{DefinitionsStage, checks};
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

/// The key, version and body of a publish, as the stage read them.
pub(super) struct Publishing<'a> {
    pub(super) tenant: readers::Tenant,
    pub(super) kind: Kind,
    pub(super) key: &'a str,
    pub(super) version: i32,
    /// The key's published version before this one.
    pub(super) previous: Option<i32>,
    pub(super) body: Body,
}

applies!(DefinitionsStage: Publish => apply);

async fn apply(cx: &mut Context, command: &Publish) -> Result<Outcome<PublishReply>, Error> {
    let tenant = super::tenant(cx)?;
    let Publish {
        kind,
        key,
        version,
        comment,
    } = command;
    let (kind, version, comment) = (*kind, *version, comment.as_deref());
    let publishing = match read(&mut cx.tx, tenant, kind, key, version).await? {
        Ok(publishing) => publishing,
        Err(refused) => return Ok(refused),
    };
    if let Some(open) = open_request(&mut cx.tx, tenant, kind, key).await? {
        return Ok(Outcome::refused_with(
            RefusalCode::Conflict,
            format!(
                "Version {} of this key waits for approval; decide or withdraw that request first.",
                open.1
            ),
            json!({ "approvalId": open.0 }),
        ));
    }
    let warnings = match checked(&mut cx.tx, &publishing).await? {
        Ok(warnings) => warnings,
        Err(refused) => return Ok(refused),
    };
    let settings = readers::approval_settings::get(&mut *cx.tx, tenant).await?;
    if settings.needs_approval(kind.as_str()) {
        let approval = request(cx, &publishing, comment).await?;
        let definition = stored(&mut cx.tx, &publishing).await?;
        let requested = Requested {
            approval,
            definition,
            warnings,
        };
        return Ok(Outcome::done(PublishReply::Requested(Box::new(requested))));
    }
    let definition = publish(cx, &publishing, None).await?;
    Ok(Outcome::done(PublishReply::Published(Published {
        definition,
        warnings,
    })))
}

/// The version to publish, or the refusal: an absent key or version (404), the version
/// already published (409), as an outcome of the command's reply `R`.
pub(super) async fn read<'a, R>(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    kind: Kind,
    key: &'a str,
    version: i32,
) -> Result<Result<Publishing<'a>, Outcome<R>>, Error> {
    let head: Option<Option<i32>> = sqlx::query_scalar(
        "SELECT published_version FROM definition_keys \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 FOR UPDATE",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(previous) = head else {
        return Ok(Err(Outcome::refused(
            RefusalCode::NotFound,
            "No such definition.",
        )));
    };
    let Some(stored) =
        readers::definitions::version(&mut **tx, tenant, kind.as_str(), key, version).await?
    else {
        return Ok(Err(Outcome::refused(
            RefusalCode::NotFound,
            "No such version.",
        )));
    };
    if previous == Some(version) {
        return Ok(Err(Outcome::refused(
            RefusalCode::Conflict,
            format!("Version {version} is already the published one."),
        )));
    }
    let body = Body::parse(kind, stored.body)
        .map_err(|e| Error::Invalid(format!("a stored body that does not read: {e}")))?;
    Ok(Ok(Publishing {
        tenant,
        kind,
        key,
        version,
        previous,
        body,
    }))
}

/// The key's open request: its id and version.
async fn open_request(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    kind: Kind,
    key: &str,
) -> Result<Option<(Uuid, i32)>, Error> {
    Ok(sqlx::query_as(
        "SELECT id, version FROM definition_approval_requests \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 AND decision IS NULL",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .fetch_optional(&mut **tx)
    .await?)
}

/// The checks' warnings, or the refusal (400) when something the version calls cannot be.
pub(super) async fn checked<R>(
    tx: &mut Transaction<'_, Postgres>,
    publishing: &Publishing<'_>,
) -> Result<Result<Vec<Finding>, Outcome<R>>, Error> {
    let checked = checks::check(tx, publishing.tenant, &publishing.body).await?;
    if checked.refusals.is_empty() {
        return Ok(Ok(checked.warnings));
    }
    let issues: Vec<_> = checked.refusals.iter().map(checks::issue).collect();
    Ok(Err(Outcome::refused_with(
        RefusalCode::ValidationError,
        "The version cannot be published.",
        json!({ "issues": issues }),
    )))
}

/// Opens the approval request of the version.
async fn request(
    cx: &mut Context,
    publishing: &Publishing<'_>,
    comment: Option<&str>,
) -> Result<topics::definitions::ApprovalRequest, Error> {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO definition_approval_requests (id, tenant_id, kind, key, version, \
         requested_by, requested_by_name, requested_at, comment) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, now(), $8)",
    )
    .bind(id)
    .bind(publishing.tenant.id())
    .bind(publishing.kind.as_str())
    .bind(publishing.key)
    .bind(publishing.version)
    .bind(&cx.command.principal.id)
    .bind(&cx.command.principal.name)
    .bind(comment)
    .execute(&mut *cx.tx)
    .await?;
    let about = (publishing.kind, publishing.key, publishing.version);
    let event = approval_event("definition.approval.requested", about, id);
    cx.audit(event);
    readers::approvals::get(&mut *cx.tx, publishing.tenant, id)
        .await?
        .ok_or_else(|| Error::Invalid("the request just opened is not there".into()))
}

/// The audit event of a request's step: kind, key, version and the request.
pub(super) fn approval_event(
    action: &'static str,
    (kind, key, version): (Kind, &str, i32),
    request: Uuid,
) -> AuditEvent {
    AuditEvent {
        action,
        subject_type: "definition_approval",
        subject_id: request.to_string(),
        payload: json!({
            "kind": kind.as_str(),
            "key": key,
            "version": version,
            "requestId": request,
        }),
    }
}

/// Makes the version the key's published one (audit `<kind>.published`, naming the approval
/// request that published it, if one did).
pub(super) async fn publish(
    cx: &mut Context,
    publishing: &Publishing<'_>,
    request: Option<Uuid>,
) -> Result<topics::definitions::Version, Error> {
    let Publishing {
        tenant,
        kind,
        key,
        version,
        ..
    } = *publishing;
    sqlx::query(
        "UPDATE definition_versions SET published_at = now(), published_by = $5 \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3 AND version = $4",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    sqlx::query(
        "UPDATE definition_keys SET published_version = $4 \
         WHERE tenant_id = $1 AND kind = $2 AND key = $3",
    )
    .bind(tenant.id())
    .bind(kind.as_str())
    .bind(key)
    .bind(version)
    .execute(&mut *cx.tx)
    .await?;
    replace_app_calls(&mut cx.tx, publishing).await?;
    let mut payload = json!({
        "kind": kind.as_str(),
        "key": key,
        "version": version,
        "previousVersion": publishing.previous,
    });
    if let Some(request) = request {
        payload["requestId"] = json!(request);
    }
    let event = AuditEvent {
        action: published_action(kind),
        subject_type: "definition",
        subject_id: format!("{}/{key}", kind.as_str()),
        payload,
    };
    cx.audit(event);
    stored(&mut cx.tx, publishing).await
}

/// The version as the readers read it.
async fn stored(
    tx: &mut Transaction<'_, Postgres>,
    publishing: &Publishing<'_>,
) -> Result<topics::definitions::Version, Error> {
    let Publishing {
        tenant,
        kind,
        key,
        version,
        ..
    } = *publishing;
    readers::definitions::version(&mut **tx, tenant, kind.as_str(), key, version)
        .await?
        .ok_or_else(|| Error::Invalid("the version being published is not there".into()))
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
    publishing: &Publishing<'_>,
) -> Result<(), Error> {
    let Publishing {
        tenant,
        kind,
        key,
        version,
        ref body,
        ..
    } = *publishing;
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
