//! The inbox: commands already applied, with their outcome, written in the same transaction as
//! the effect.

use serde_json::Value;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::Error;

/// The stored outcome of `command_id`, when it was applied before.
pub(crate) async fn outcome(
    tx: &mut Transaction<'_, Postgres>,
    command_id: Uuid,
) -> Result<Option<Value>, Error> {
    let outcome = sqlx::query_scalar::<_, Value>("SELECT outcome FROM inbox WHERE command_id = $1")
        .bind(command_id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(outcome)
}

/// What identifies an applied command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Applied<'a> {
    pub command_id: Uuid,
    pub stage: &'a str,
    pub topic: &'a str,
    pub tenant: Uuid,
}

/// Records the command as applied. A concurrent apply of the same command makes this fail with
/// a unique violation, which rolls the whole effect back.
pub(crate) async fn record(
    tx: &mut Transaction<'_, Postgres>,
    applied: Applied<'_>,
    outcome: &Value,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO inbox (command_id, stage, topic, tenant_id, outcome) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(applied.command_id)
    .bind(applied.stage)
    .bind(applied.topic)
    .bind(applied.tenant)
    .bind(outcome)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
