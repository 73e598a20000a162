//! `StoreSecret` and `RevokeSecret` (SPEC §4.7 rules 1-2): a secret's sealed value stored,
//! replaced or removed. The value arrives sealed by the API and is stored as it came; this
//! stage never holds the key. Audit `app.secret.stored` / `app.secret.revoked`, never with the
//! value.

use serde_json::json;
use topics::installs::{RevokeSecret, SecretState, StoreSecret};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::InstallsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

applies!(InstallsStage: StoreSecret => store);

applies!(InstallsStage: RevokeSecret => revoke);

async fn store(cx: &mut Context, command: &StoreSecret) -> Result<Outcome<SecretState>, Error> {
    let tenant = cx.tenant()?;
    let StoreSecret {
        name,
        secret,
        sealed,
    } = command;
    // The command's own time, as the install's (`install.rs`): a batch shares one `now()`.
    sqlx::query(
        "INSERT INTO app_secrets (tenant_id, app_name, name, key_id, nonce, ciphertext, \
         stored_by, stored_at) VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) \
         ON CONFLICT (tenant_id, app_name, name) DO UPDATE SET key_id = $4, nonce = $5, \
         ciphertext = $6, stored_by = $7, stored_at = clock_timestamp()",
    )
    .bind(tenant)
    .bind(name)
    .bind(secret)
    .bind(&sealed.key_id)
    .bind(&sealed.nonce)
    .bind(&sealed.ciphertext)
    .bind(&cx.command.principal.id)
    .execute(&mut *cx.tx)
    .await?;
    record(cx, "app.secret.stored", name, secret);
    state(cx, tenant, name, secret, true).await
}

async fn revoke(cx: &mut Context, command: &RevokeSecret) -> Result<Outcome<SecretState>, Error> {
    let tenant = cx.tenant()?;
    let RevokeSecret { name, secret } = command;
    let removed =
        sqlx::query("DELETE FROM app_secrets WHERE tenant_id = $1 AND app_name = $2 AND name = $3")
            .bind(tenant)
            .bind(name)
            .bind(secret)
            .execute(&mut *cx.tx)
            .await?;
    if removed.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No value is stored for this secret.",
        ));
    }
    record(cx, "app.secret.revoked", name, secret);
    state(cx, tenant, name, secret, false).await
}

/// The secret after the change, with what the install still misses.
async fn state(
    cx: &mut Context,
    tenant: Uuid,
    name: &str,
    secret: &str,
    stored: bool,
) -> Result<Outcome<SecretState>, Error> {
    let install = super::answer(&mut cx.tx, tenant, name).await?;
    Ok(Outcome::done(SecretState {
        app_name: name.to_owned(),
        name: secret.to_owned(),
        stored,
        missing_secrets: install.map(|i| i.missing_secrets),
    }))
}

fn record(cx: &mut Context, action: &'static str, name: &str, secret: &str) {
    let event = AuditEvent {
        action,
        subject_type: "app_secret",
        subject_id: format!("{name}/{secret}"),
        payload: json!({ "app": name, "secret": secret }),
    };
    cx.audit(event);
}
