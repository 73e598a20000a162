//! The inbox: one row per command a stage received, holding the reply it got (its outcome, or
//! why it was dead-lettered), so a redelivered command is answered from here instead of being
//! applied twice.
//!
//! A stage takes the command's row first in the transaction that applies it ([`take`]): a second
//! apply of the same command (a redelivery racing a rebalance) waits on that row and then finds
//! it taken, before its own effect can run into the first one's.

use sqlx::types::Json;
use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use topics::{Encoded, Reply};
use uuid::Uuid;

use crate::Error;

/// What identifies a command in the inbox.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub(crate) command_id: Uuid,
    pub(crate) stage: &'a str,
    pub(crate) topic: &'a str,
    /// `None` for the platform's own commands.
    pub(crate) tenant: Option<Uuid>,
}

/// Takes the command's row in `tx`. `None`: taken, the effect is this transaction's to apply
/// (then [`applied`]). `Some`: the command got a reply before; here it is.
pub(crate) async fn take(
    tx: &mut Transaction<'_, Postgres>,
    entry: Entry<'_>,
) -> Result<Option<Reply>, Error> {
    if insert(&mut **tx, entry, None).await? {
        return Ok(None);
    }
    stored(&mut **tx, entry.command_id).await.map(Some)
}

/// Sets the outcome of the command taken in `tx`.
pub(crate) async fn applied(
    tx: &mut Transaction<'_, Postgres>,
    command_id: Uuid,
    outcome: &Encoded,
) -> Result<(), Error> {
    sqlx::query("UPDATE inbox SET outcome = $2 WHERE command_id = $1")
        .bind(command_id)
        .bind(Json(outcome))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Records that the command was dead-lettered, and answers its reply: the dead letter, or the
/// reply it already had (a command applied by another consumer keeps its outcome).
pub(crate) async fn dead_lettered(
    pool: &PgPool,
    entry: Entry<'_>,
    reason: &str,
) -> Result<Reply, Error> {
    let mut tx = pool.begin().await?;
    if insert(&mut *tx, entry, Some(reason)).await? {
        tx.commit().await?;
        return Ok(Reply::DeadLettered {
            reason: reason.to_owned(),
        });
    }
    let reply = stored(&mut *tx, entry.command_id).await?;
    tx.commit().await?;
    Ok(reply)
}

/// Inserts the command's row unless it exists; `true` when this call inserted it.
async fn insert(
    executor: impl PgExecutor<'_>,
    entry: Entry<'_>,
    dead_letter_reason: Option<&str>,
) -> Result<bool, Error> {
    let inserted = sqlx::query(
        "INSERT INTO inbox (command_id, stage, topic, tenant_id, dead_letter_reason) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (command_id) DO NOTHING",
    )
    .bind(entry.command_id)
    .bind(entry.stage)
    .bind(entry.topic)
    .bind(entry.tenant)
    .bind(dead_letter_reason)
    .execute(executor)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The reply stored for a command whose row another transaction committed, as stored: the
/// stage answers it again without reading its value (whatever the build that stored it).
async fn stored(executor: impl PgExecutor<'_>, command_id: Uuid) -> Result<Reply, Error> {
    let (outcome, reason) = sqlx::query_as::<_, (Option<Json<Encoded>>, Option<String>)>(
        "SELECT outcome, dead_letter_reason FROM inbox WHERE command_id = $1",
    )
    .bind(command_id)
    .fetch_one(executor)
    .await?;
    match (outcome, reason) {
        (Some(Json(outcome)), _) => Ok(Reply::Applied { outcome }),
        (None, Some(reason)) => Ok(Reply::DeadLettered { reason }),
        (None, None) => Err(Error::Invalid(format!(
            "inbox row of {command_id} holds no reply"
        ))),
    }
}
