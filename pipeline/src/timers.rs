//! The timer relay: a due row of a timer table (a run's retry delay or callback deadline, a
//! case's SLA deadline) becomes a command on its topic, acknowledged by the broker before the
//! row is deleted, so a timer outlives any restart and fires at least once; the stage that
//! gets a second one finds nothing to do. Several pipelines share the work (`FOR UPDATE SKIP
//! LOCKED`). Each table says how it is read ([`Timers`]).

use std::time::Duration;

use futures::future::try_join_all;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use topics::{Envelope, Message, Principal, Producer};
use uuid::Uuid;

use crate::Error;
use crate::workers::{Worker, WorkerState};

/// How often due timers are looked for: a timer fires at most this late (plus its topic's
/// queue), which is small beside the delays they carry (a retry's backoff of 2 s and up).
const POLL: Duration = Duration::from_millis(250);
/// Timers relayed per transaction.
const BATCH: i64 = 256;

/// A table of timers and the command each one fires.
pub(crate) trait Timers: Send + Sync + 'static {
    type Command: Message;
    /// The principal the commands act as.
    const ACTOR: &'static str;
    /// Whether any row is due (one boolean, read without a lock).
    const ANY_DUE: &'static str;
    /// Selects up to `$1` due rows as `(row id, tenant, target, traceparent)`, locked, skipping
    /// locked ones; the command continues the trace its `traceparent` names (NULL: none).
    const DUE: &'static str;
    /// Deletes the rows whose ids are `$1`.
    const SPENT: &'static str;

    /// The command a due timer of `target` fires.
    fn command(target: Uuid) -> Self::Command;
}

/// Relays `T`'s due timers until `stop`.
pub(crate) async fn relay<T: Timers>(
    pool: PgPool,
    producer: Producer,
    worker: Worker,
    stop: CancellationToken,
) {
    loop {
        let relayed = match relay_due::<T>(&pool, &producer).await {
            Ok(n) => {
                worker.set(WorkerState::Running);
                n
            }
            Err(error) => {
                worker.set(WorkerState::Retrying);
                tracing::warn!(%error, actor = T::ACTOR, "timers not relayed; retrying");
                0
            }
        };
        if relayed as i64 == BATCH {
            continue;
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(POLL) => {}
        }
    }
    worker.set(WorkerState::Stopped);
}

async fn relay_due<T: Timers>(pool: &PgPool, producer: &Producer) -> Result<usize, Error> {
    // Most polls find nothing due: one statement says so, where a transaction that locks
    // nothing took three round trips (BEGIN, the select, ROLLBACK), four times a second per
    // table, in every idle pipeline (BENCHMARKS.md "Twice the webhooks": at rest).
    let any_due: bool = sqlx::query_scalar(T::ANY_DUE).fetch_one(pool).await?;
    if !any_due {
        return Ok(0);
    }
    let mut tx = pool.begin().await?;
    let due: Vec<(Uuid, Uuid, Uuid, Option<String>)> = sqlx::query_as(T::DUE)
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
    if due.is_empty() {
        return Ok(0);
    }
    try_join_all(due.iter().map(|(_, tenant, target, traceparent)| {
        let command = Envelope::new(
            Some(*tenant),
            Principal::system(T::ACTOR),
            Uuid::now_v7().to_string(),
            traceparent.clone(),
            T::command(*target),
        );
        async move { producer.send(&command).await }
    }))
    .await?;
    let ids: Vec<Uuid> = due.iter().map(|(id, ..)| *id).collect();
    sqlx::query(T::SPENT).bind(&ids).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(due.len())
}
