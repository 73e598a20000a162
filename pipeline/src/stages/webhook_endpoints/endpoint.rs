//! A tenant's webhook endpoints: created (at most [`MAX_PER_TENANT`]), changed, the signing
//! secret rotated (the previous one signs beside it for 24 hours, SPEC §6.2), deleted with
//! their deliveries. Disabling an endpoint holds its deliveries; enabling it sends them.
//! Audit payloads name the endpoint's host, never its URL: a query string
//! may carry the receiver's own token.

use readers::webhook_endpoints::{self, MAX_PER_TENANT};
use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::webhook_endpoints::Endpoint;
use topics::webhook_endpoints::{Create, Delete, RotateSecret, Update};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::WebhookEndpointsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

/// How long a secret signs beside its successor after a rotation.
const ROTATION_OVERLAP: &str = "24 hours";

applies!(WebhookEndpointsStage: Create => create);

applies!(WebhookEndpointsStage: Update => update);

applies!(WebhookEndpointsStage: RotateSecret => rotate);

applies!(WebhookEndpointsStage: Delete => delete);

async fn create(cx: &mut Context, create: &Create) -> Result<Outcome<Endpoint>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let Create {
        endpoint_id,
        url,
        event_types,
        description,
        enabled,
        secret,
    } = create;
    let existing: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1")
            .bind(tenant.id())
            .fetch_one(&mut *cx.tx)
            .await?;
    if existing >= MAX_PER_TENANT {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("A tenant has at most {MAX_PER_TENANT} webhook endpoints."),
        ));
    }
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, event_types, enabled, description, \
         secret_key_id, secret_nonce, secret_ciphertext, created_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now(), now())",
    )
    .bind(endpoint_id)
    .bind(tenant.id())
    .bind(url)
    .bind(event_types)
    .bind(enabled)
    .bind(description)
    .bind(&secret.key_id)
    .bind(&secret.nonce)
    .bind(&secret.ciphertext)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    let endpoint = read(&mut cx.tx, tenant, *endpoint_id).await?;
    audited(cx, ("webhook_endpoint.created", &endpoint));
    Ok(Outcome::done(endpoint))
}

async fn update(cx: &mut Context, update: &Update) -> Result<Outcome<Endpoint>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let Update {
        endpoint_id,
        url,
        event_types,
        description,
        enabled,
    } = update;
    let updated = sqlx::query(
        "UPDATE webhook_endpoints SET url = coalesce($3, url), \
         event_types = coalesce($4, event_types), description = coalesce($5, description), \
         enabled = coalesce($6, enabled), updated_at = now() \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.id())
    .bind(endpoint_id)
    .bind(url)
    .bind(event_types)
    .bind(description)
    .bind(enabled)
    .execute(&mut *cx.tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(not_found());
    }
    if let Some(enabled) = enabled {
        hold_or_release(&mut cx.tx, *endpoint_id, *enabled).await?;
    }
    let endpoint = read(&mut cx.tx, tenant, *endpoint_id).await?;
    audited(cx, ("webhook_endpoint.updated", &endpoint));
    Ok(Outcome::done(endpoint))
}

async fn rotate(cx: &mut Context, rotate: &RotateSecret) -> Result<Outcome<Endpoint>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let RotateSecret {
        endpoint_id,
        secret,
    } = rotate;
    let endpoint_id = *endpoint_id;
    // The secret before a rotation signs for 24 hours (SPEC §6.2): a second rotation within
    // them would end it early, so it waits until the overlap ends. The lock is the one the
    // update takes anyway (not FOR UPDATE, which would wait for events being recorded).
    let overlapping: Option<bool> = sqlx::query_scalar(
        "SELECT coalesce(previous_expires_at > now(), false) FROM webhook_endpoints \
         WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE",
    )
    .bind(tenant.id())
    .bind(endpoint_id)
    .fetch_optional(&mut *cx.tx)
    .await?;
    match overlapping {
        None => return Ok(not_found()),
        Some(true) => {
            return Ok(Outcome::refused(
                RefusalCode::Conflict,
                "The secret before the last rotation still signs (previousSecretExpiresAt); \
                 rotate again once it ends.",
            ));
        }
        Some(false) => {}
    }
    let rotated = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE webhook_endpoints SET previous_key_id = secret_key_id, \
         previous_nonce = secret_nonce, previous_ciphertext = secret_ciphertext, \
         previous_expires_at = now() + interval '{ROTATION_OVERLAP}', \
         secret_key_id = $3, secret_nonce = $4, secret_ciphertext = $5, updated_at = now() \
         WHERE tenant_id = $1 AND id = $2"
    )))
    .bind(tenant.id())
    .bind(endpoint_id)
    .bind(&secret.key_id)
    .bind(&secret.nonce)
    .bind(&secret.ciphertext)
    .execute(&mut *cx.tx)
    .await?;
    if rotated.rows_affected() == 0 {
        return Ok(not_found());
    }
    let endpoint = read(&mut cx.tx, tenant, endpoint_id).await?;
    audited(cx, ("webhook_endpoint.secret_rotated", &endpoint));
    Ok(Outcome::done(endpoint))
}

async fn delete(cx: &mut Context, delete: &Delete) -> Result<Outcome<()>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let endpoint_id = delete.endpoint_id;
    let Some(endpoint) = webhook_endpoints::get(&mut *cx.tx, tenant, endpoint_id).await? else {
        return Ok(not_found());
    };
    sqlx::query("DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.id())
        .bind(endpoint_id)
        .execute(&mut *cx.tx)
        .await?;
    audited(cx, ("webhook_endpoint.deleted", &endpoint));
    Ok(Outcome::done(()))
}

/// A disabled endpoint's deliveries that are still to go wait without a due time (so
/// dispatchers never scan them); enabled again, they are due at once.
async fn hold_or_release(
    tx: &mut Transaction<'_, Postgres>,
    endpoint_id: Uuid,
    enabled: bool,
) -> Result<(), Error> {
    let sql = if enabled {
        "UPDATE webhook_deliveries SET next_attempt_at = now(), updated_at = now() \
         WHERE endpoint_id = $1 AND status IN ('pending', 'failed') AND next_attempt_at IS NULL"
    } else {
        "UPDATE webhook_deliveries SET next_attempt_at = NULL, updated_at = now() \
         WHERE endpoint_id = $1 AND status IN ('pending', 'failed') \
           AND next_attempt_at IS NOT NULL"
    };
    let released = sqlx::query(sql)
        .bind(endpoint_id)
        .execute(&mut **tx)
        .await?;
    if enabled && released.rows_affected() > 0 {
        crate::webhook_deliveries::wake(tx).await?;
    }
    Ok(())
}

fn not_found<R>() -> Outcome<R> {
    Outcome::refused(RefusalCode::NotFound, "No such webhook endpoint.")
}

async fn read(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    id: Uuid,
) -> Result<Endpoint, Error> {
    webhook_endpoints::get(&mut **tx, tenant, id)
        .await?
        .ok_or_else(|| Error::Contract("an endpoint just written is absent".into()))
}

fn audited(cx: &mut Context, (action, endpoint): (&'static str, &Endpoint)) {
    let host = url::Url::parse(&endpoint.url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned));
    let event = AuditEvent {
        action,
        subject_type: "webhook_endpoint",
        subject_id: endpoint.id.to_string(),
        payload: json!({
            "endpointId": endpoint.id,
            "host": host,
            "eventTypes": endpoint.event_types,
            "enabled": endpoint.enabled,
        }),
    };
    cx.audit(event);
}
