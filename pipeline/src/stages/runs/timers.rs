//! The timer relay: a due row of `run_timers` (a retry's delay, a callback's deadline) becomes
//! a `Resume` command on `runs.commands`, acknowledged by the broker before the row is
//! deleted, so a timer outlives any restart and fires at least once; a second `Resume` finds
//! nothing to do. Several pipelines share the work (`FOR UPDATE SKIP LOCKED`).

use std::time::Duration;

use futures::future::try_join_all;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use topics::runs::Command;
use topics::{Envelope, Principal, Producer};
use uuid::Uuid;

use crate::Error;
use crate::workers::{Worker, WorkerState};

/// How often due timers are looked for: a timer fires at most this late (plus the run's
/// queue), which is small beside the delays it carries (a retry's backoff of 2 s and up).
const POLL: Duration = Duration::from_millis(250);
/// Timers relayed per transaction.
const BATCH: i64 = 256;

/// Relays due timers until `stop`.
pub(crate) async fn relay(
    pool: PgPool,
    producer: Producer,
    worker: Worker,
    stop: CancellationToken,
) {
    loop {
        let relayed = match relay_due(&pool, &producer).await {
            Ok(n) => {
                worker.set(WorkerState::Running);
                n
            }
            Err(error) => {
                worker.set(WorkerState::Retrying);
                tracing::warn!(%error, "run timers not relayed; retrying");
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

async fn relay_due(pool: &PgPool, producer: &Producer) -> Result<usize, Error> {
    let mut tx = pool.begin().await?;
    let due: Vec<(Uuid, Uuid, Uuid)> = sqlx::query_as(
        "SELECT id, tenant_id, run_id FROM run_timers WHERE due_at <= now() \
         ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    if due.is_empty() {
        return Ok(0);
    }
    try_join_all(due.iter().map(|(_, tenant, run_id)| {
        let command = Envelope::new(
            Some(*tenant),
            Principal::system("run-timers"),
            Uuid::now_v7().to_string(),
            None,
            Command::Resume { run_id: *run_id },
        );
        async move { producer.send(&command).await }
    }))
    .await?;
    let ids: Vec<Uuid> = due.iter().map(|(id, _, _)| *id).collect();
    sqlx::query("DELETE FROM run_timers WHERE id = ANY($1)")
        .bind(&ids)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(due.len())
}
