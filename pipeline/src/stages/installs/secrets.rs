//! `StoreSecret` and `RevokeSecret` (SPEC §4.7 rules 1-2): a secret's sealed value stored,
//! replaced or removed. The value arrives sealed by the API and is stored as it came; this
//! stage never holds the key. Audit `app.secret.stored` / `app.secret.revoked`, never with the
//! value.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::installs::{Answer, Command, SecretState};
use topics::sealed::Sealed;
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn store(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    name: &str,
    secret: &str,
    sealed: &Sealed,
) -> Result<Outcome<Answer>, Error> {
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
    .bind(&command.principal.id)
    .execute(&mut **tx)
    .await?;
    record(tx, command, "app.secret.stored", name, secret).await?;
    state(tx, tenant, name, secret, true).await
}

pub(super) async fn revoke(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    name: &str,
    secret: &str,
) -> Result<Outcome<Answer>, Error> {
    let removed =
        sqlx::query("DELETE FROM app_secrets WHERE tenant_id = $1 AND app_name = $2 AND name = $3")
            .bind(tenant)
            .bind(name)
            .bind(secret)
            .execute(&mut **tx)
            .await?;
    if removed.rows_affected() == 0 {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No value is stored for this secret.",
        ));
    }
    record(tx, command, "app.secret.revoked", name, secret).await?;
    state(tx, tenant, name, secret, false).await
}

/// The secret after the change, with what the install still misses.
async fn state(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    name: &str,
    secret: &str,
    stored: bool,
) -> Result<Outcome<Answer>, Error> {
    let install = super::answer(tx, tenant, name).await?;
    Ok(Outcome::done(Answer::Secret(SecretState {
        app_name: name.to_owned(),
        name: secret.to_owned(),
        stored,
        missing_secrets: install.map(|i| i.missing_secrets),
    })))
}

async fn record(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    action: &'static str,
    name: &str,
    secret: &str,
) -> Result<(), Error> {
    let event = AuditEvent {
        action,
        subject_type: "app_secret",
        subject_id: format!("{name}/{secret}"),
        payload: json!({ "app": name, "secret": secret }),
    };
    audit::record(tx, command, event).await
}
