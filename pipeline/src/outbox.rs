//! The outbox: events written in the same transaction as a stage's effect (the stages that emit
//! events write its rows), relayed to Kafka in id order by one relay at a time (an advisory
//! lock), then deleted. A crash between produce and
//! delete relays a batch twice; consumers are idempotent by event id, so that is harmless.

use std::time::Duration;

use futures::future::try_join_all;
use serde_json::Value;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;
use topics::Producer;

use crate::Error;
use crate::job::Job;
use crate::workers::{Worker, WorkerState};

/// Rows relayed per transaction.
const BATCH: i64 = 256;
/// Look even without a notification, in case one was missed (a notification is only sent by
/// a commit that wrote rows, and is lost while the listening connection is down, which the
/// relay hears of and looks then): every 10 s, where a look every second was four statements
/// a second in an idle pipeline (BENCHMARKS.md "Twice the webhooks", fourth stop: "At rest").
const POLL: Duration = Duration::from_secs(10);
/// Without notifications (`LISTEN` refused), the relay looks this often.
const POLL_UNLISTENED: Duration = Duration::from_secs(1);
/// How long the relay waits after a failed look before the next.
const RETRY: Duration = Duration::from_secs(1);
/// Arbitrary constant naming the relay's advisory lock.
const RELAY_LOCK: i64 = 0x6f75_7462_6f78;

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    topic: String,
    key: Vec<u8>,
    payload: Vec<u8>,
    headers: Value,
}

/// Moves outbox rows to Kafka.
#[derive(Debug, Clone)]
pub(crate) struct Relay {
    pool: PgPool,
    producer: Producer,
    /// The relay's state on `/healthz` (task queue `outbox`).
    worker: Worker,
}

impl Relay {
    pub(crate) fn new(pool: PgPool, producer: Producer, worker: Worker) -> Self {
        Self {
            pool,
            producer,
            worker,
        }
    }

    /// Relays one batch; returns how many rows went out.
    async fn relay_batch(&self) -> Result<usize, Error> {
        let mut tx = self.pool.begin().await?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(RELAY_LOCK)
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            // Another relay is at work; one at a time keeps per-key order.
            return Ok(0);
        }
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, topic, key, payload, headers FROM outbox ORDER BY id LIMIT $1",
        )
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            return Ok(0);
        }
        // Sends are queued in id order, and the idempotent producer keeps that order per
        // partition while they are in flight together.
        try_join_all(rows.iter().map(|row| {
            let headers = header_pairs(&row.headers);
            async move {
                let borrowed: Vec<(&str, &[u8])> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_bytes()))
                    .collect();
                self.producer
                    .send_raw(&row.topic, &row.key, &row.payload, &borrowed)
                    .await
            }
        }))
        .await?;
        fail::fail_point!("outbox.after_send");
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        sqlx::query("DELETE FROM outbox WHERE id = ANY($1)")
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(rows.len())
    }
}

impl Job for Relay {
    /// Relays until `stop` is cancelled: at once on each `outbox` notification, else every poll.
    async fn run(self, stop: CancellationToken) {
        let mut listener = match PgListener::connect_with(&self.pool).await {
            Ok(mut listener) => match listener.listen("outbox").await {
                Ok(()) => Some(listener),
                Err(error) => {
                    tracing::warn!(%error, "outbox notifications off; polling");
                    None
                }
            },
            Err(error) => {
                tracing::warn!(%error, "outbox notifications off; polling");
                None
            }
        };
        // Notifications may have gone unheard (the listener could not reconnect).
        let mut unheard = false;
        loop {
            let relayed = match self.relay_batch().await {
                Ok(n) => {
                    self.worker.set(WorkerState::Running);
                    n
                }
                Err(error) => {
                    self.worker.set(WorkerState::Retrying);
                    tracing::warn!(%error, "outbox relay failed; retrying");
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(RETRY) => {}
                    }
                    continue;
                }
            };
            if relayed as i64 == BATCH {
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = wait_for_notification(&mut listener, &mut unheard) => {}
            }
        }
        self.worker.set(WorkerState::Stopped);
    }
}

fn header_pairs(headers: &Value) -> Vec<(String, String)> {
    headers
        .as_object()
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for a notification, for [`POLL`], or for the listening connection to be lost (then
/// notifications may have been missed, and the relay looks at once). sqlx reconnects (and
/// listens again) before it says the connection was lost; when that reconnection fails, the
/// next wait lasts only [`POLL_UNLISTENED`], since a row committed before the listener is back
/// sends its notification to nobody.
async fn wait_for_notification(listener: &mut Option<PgListener>, unheard: &mut bool) {
    let Some(l) = listener else {
        tokio::time::sleep(POLL_UNLISTENED).await;
        return;
    };
    let wait = if *unheard { POLL_UNLISTENED } else { POLL };
    match tokio::time::timeout(wait, l.try_recv()).await {
        Ok(Ok(_)) | Err(_) => *unheard = false,
        Ok(Err(error)) => {
            tracing::warn!(%error, "outbox notifications not heard; looking every second meanwhile");
            *unheard = true;
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// Writes `envelope` to the outbox in `tx`: relayed to its topic once `tx` commits.
pub(crate) async fn write<B: topics::Message>(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    envelope: &topics::Envelope<B>,
) -> Result<(), Error> {
    let payload = envelope.encode()?;
    let mut headers = serde_json::Map::new();
    headers.insert("id".into(), Value::String(envelope.id.to_string()));
    if let Some(traceparent) = &envelope.traceparent {
        headers.insert("traceparent".into(), Value::String(traceparent.clone()));
    }
    sqlx::query("INSERT INTO outbox (topic, key, payload, headers) VALUES ($1, $2, $3, $4)")
        .bind(B::TOPIC.name)
        .bind(envelope.key())
        .bind(payload)
        .bind(Value::Object(headers))
        .execute(&mut **tx)
        .await?;
    Ok(())
}
