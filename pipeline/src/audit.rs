//! Audit events (SPEC §6.1): one row of `audit_events` per recorded action, written by the stage
//! in the transaction of the effect it records, so an effect without its audit row (or the
//! reverse) cannot commit. The actor is the command's principal. Payloads never hold secret
//! values or vendor payloads.

use serde_json::Value;
use sqlx::{Postgres, Transaction};
use topics::{Envelope, PrincipalKind};
use uuid::Uuid;

use crate::Error;

/// One recorded action.
#[derive(Debug)]
pub(crate) struct AuditEvent {
    /// SPEC §6.1 name, for example `app.uploaded`.
    pub(crate) action: &'static str,
    /// What it is about: `app_version`, `app_install`, `app_secret`, `approval_settings`.
    pub(crate) subject_type: &'static str,
    pub(crate) subject_id: String,
    pub(crate) payload: Value,
}

pub(crate) async fn record<B>(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<B>,
    event: AuditEvent,
) -> Result<(), Error> {
    let actor = &command.principal;
    sqlx::query(
        "INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, \
         subject_type, subject_id, payload, request_id, command_id, occurred_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now())",
    )
    .bind(Uuid::now_v7())
    .bind(command.tenant)
    .bind(event.action)
    .bind(actor_type(actor.kind))
    .bind(&actor.id)
    .bind(&actor.name)
    .bind(event.subject_type)
    .bind(&event.subject_id)
    .bind(&event.payload)
    .bind(&command.request_id)
    .bind(command.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn actor_type(kind: PrincipalKind) -> &'static str {
    match kind {
        PrincipalKind::Human => "human",
        PrincipalKind::Machine => "machine",
        PrincipalKind::Applicant => "applicant",
        PrincipalKind::System => "system",
    }
}
