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

/// An audit row of a batch, written with the others by [`record_all`].
#[derive(Debug)]
pub(crate) struct Row {
    id: Uuid,
    tenant: Option<Uuid>,
    action: &'static str,
    actor_type: &'static str,
    actor_id: String,
    actor_name: String,
    subject_type: &'static str,
    subject_id: String,
    payload: Value,
    request_id: String,
    command_id: Uuid,
}

impl Row {
    /// `event`, recorded by `command`'s principal.
    pub(crate) fn of<B>(command: &Envelope<B>, event: AuditEvent) -> Self {
        let actor = &command.principal;
        Row {
            id: Uuid::now_v7(),
            tenant: command.tenant,
            action: event.action,
            actor_type: actor_type(actor.kind),
            actor_id: actor.id.clone(),
            actor_name: actor.name.clone(),
            subject_type: event.subject_type,
            subject_id: event.subject_id,
            payload: event.payload,
            request_id: command.request_id.clone(),
            command_id: command.id,
        }
    }
}

/// Writes a batch's audit rows in one statement (the count trigger runs once for them all).
pub(crate) async fn record_all(
    tx: &mut Transaction<'_, Postgres>,
    rows: &[Row],
) -> Result<(), Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let column = |f: fn(&Row) -> &str| rows.iter().map(f).collect::<Vec<&str>>();
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let tenants: Vec<Option<Uuid>> = rows.iter().map(|r| r.tenant).collect();
    let payloads: Vec<&Value> = rows.iter().map(|r| &r.payload).collect();
    let commands: Vec<Uuid> = rows.iter().map(|r| r.command_id).collect();
    sqlx::query(
        "INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, \
         subject_type, subject_id, payload, request_id, command_id, occurred_at) \
         SELECT *, now() FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
           $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::text[], $11::uuid[])",
    )
    .bind(&ids)
    .bind(&tenants)
    .bind(column(|r| r.action))
    .bind(column(|r| r.actor_type))
    .bind(column(|r| &r.actor_id))
    .bind(column(|r| &r.actor_name))
    .bind(column(|r| r.subject_type))
    .bind(column(|r| &r.subject_id))
    .bind(&payloads)
    .bind(column(|r| &r.request_id))
    .bind(&commands)
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
