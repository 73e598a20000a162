//! The recorder: the answers of a dispatcher's attempts, written as they come, many a
//! transaction ([`record`]), with the database's absence waited out.

use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::record::{self, Answer};
use crate::workers::{Worker, WorkerState};

/// Answers recorded in one transaction at most.
const RECORD_BATCH: usize = 256;

/// What an attempt leaves for the recorder.
pub(super) enum Done {
    Answered(Answer),
    /// No secret of this worker signs for the endpoint: the delivery is given back.
    Unsigned {
        delivery_id: Uuid,
        lease_id: Uuid,
    },
}

/// Records answers as they come, many a transaction. A write the database could not take
/// (it is away, or a conflict) is tried again with growing pauses, the answers held in memory
/// meanwhile (at most a channel's worth: the senders wait); a batch the database refuses is
/// written one answer at a time, so an answer that can never be recorded is dropped alone (its
/// lease ends, and it is sent again). A dispatcher that dies with answers unrecorded lets their
/// leases end too.
pub(super) async fn run(
    pool: PgPool,
    mut answers: mpsc::Receiver<Done>,
    worker: Worker,
    stop: CancellationToken,
) {
    let mut batch = Vec::with_capacity(RECORD_BATCH);
    while answers.recv_many(&mut batch, RECORD_BATCH).await > 0 {
        let (answered, unsigned) = split(std::mem::take(&mut batch));
        if !unsigned.is_empty() {
            let given_back = record::unsigned(&pool, &unsigned).await;
            if let Err(error) = given_back {
                tracing::warn!(%error, "deliveries not given back; their leases will end");
            }
        }
        if answered.is_empty() {
            continue;
        }
        match written(&pool, &answered, &worker, &stop).await {
            Ok(()) => {}
            Err(refused) if answered.len() > 1 => {
                tracing::warn!(%refused, "a batch of answers refused; recording one at a time");
                for answer in answered.chunks(1) {
                    if let Err(error) = written(&pool, answer, &worker, &stop).await {
                        tracing::error!(%error, delivery = %answer[0].delivery_id,
                            "an answer not recorded; the delivery goes again when its lease ends");
                    }
                }
            }
            Err(error) => {
                tracing::error!(%error, delivery = %answered[0].delivery_id,
                    "an answer not recorded; the delivery goes again when its lease ends");
            }
        }
    }
}

/// Writes `answered`, waiting out a database that is away (until the stop); answers the error
/// the database gave when it refused them.
async fn written(
    pool: &PgPool,
    answered: &[Answer],
    worker: &Worker,
    stop: &CancellationToken,
) -> Result<(), crate::Error> {
    let mut wait = Duration::from_millis(100);
    loop {
        match record::answers(pool, answered).await {
            Ok(recorded) => {
                worker.set(WorkerState::Running);
                for (tenant, status) in recorded {
                    metrics::counter!("svc.webhook.delivery.count",
                        "tenant" => tenant.to_string(), "status" => status)
                    .increment(1);
                }
                return Ok(());
            }
            Err(error) if error.class() == crate::error::RetryClass::Poison => return Err(error),
            Err(error) if stop.is_cancelled() && wait >= Duration::from_secs(5) => {
                return Err(error);
            }
            Err(error) => {
                worker.set(WorkerState::Retrying);
                tracing::warn!(%error, "delivery answers not recorded yet; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

fn split(batch: Vec<Done>) -> (Vec<Answer>, Vec<(Uuid, Uuid)>) {
    let mut answered = Vec::new();
    let mut unsigned = Vec::new();
    for done in batch {
        match done {
            Done::Answered(answer) => answered.push(answer),
            Done::Unsigned {
                delivery_id,
                lease_id,
            } => unsigned.push((delivery_id, lease_id)),
        }
    }
    (answered, unsigned)
}
