//! Recording attempts, many in one transaction: each delivery moves to `succeeded`, `failed`
//! (due again by the [`schedule`](super::schedule)) or `exhausted`, its lease released, with
//! a row of `webhook_delivery_attempts`; a delivery given up notifies the tenant's admins
//! (`webhook_delivery_exhausted`, once per delivery). An answer is recorded only under the
//! claim that leased it, and only while the delivery stands where the attempt found it: a
//! dispatcher that lost its lease (it took longer than the lease, and another claimed it)
//! records nothing, and cannot clear the other's lease.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::schedule;
use super::send::Attempted;
use crate::Error;

/// How long a delivery no secret of this worker opens waits before another try.
const UNSIGNED_WAIT_SECONDS: f64 = 60.0;

/// One attempt to record.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) delivery_id: Uuid,
    pub(super) lease_id: Uuid,
    pub(super) tenant_id: Uuid,
    pub(super) endpoint_id: Uuid,
    pub(super) event_type: String,
    pub(super) event_id: Uuid,
    pub(super) attempt: i32,
    pub(super) allowed: i32,
    pub(super) attempted: Attempted,
}

impl Answer {
    /// The status it leaves, and when it is due again.
    fn standing(&self) -> (&'static str, Option<DateTime<Utc>>) {
        if self.attempted.succeeded() {
            return ("succeeded", None);
        }
        match schedule::after_failure(self.attempt, self.allowed) {
            Some(wait) => (
                "failed",
                chrono::Duration::from_std(wait)
                    .ok()
                    .map(|wait| self.attempted.started_at + wait),
            ),
            None => ("exhausted", None),
        }
    }
}

/// Records `answers` in one transaction; answers the tenant and status of each recorded.
pub(super) async fn answers(
    pool: &PgPool,
    answers: &[Answer],
) -> Result<Vec<(Uuid, &'static str)>, Error> {
    let mut tx = pool.begin().await?;
    let recorded = deliveries(&mut tx, answers).await?;
    // Only the answers recorded under their own lease: a batch can hold a stale answer of a
    // delivery beside the answer of its next claim, and the stale one records nothing.
    let recorded: Vec<&Answer> = answers
        .iter()
        .filter(|answer| recorded.contains(&(answer.delivery_id, answer.lease_id)))
        .collect();
    attempt_rows(&mut tx, &recorded).await?;
    for answer in recorded
        .iter()
        .filter(|answer| answer.standing().0 == "exhausted")
    {
        notify_exhausted(&mut tx, answer).await?;
    }
    tx.commit().await?;
    Ok(recorded
        .iter()
        .map(|answer| (answer.tenant_id, answer.standing().0))
        .collect())
}

/// Moves each delivery an answer is recorded for; answers which, as `(delivery, lease)`.
async fn deliveries(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    answers: &[Answer],
) -> Result<Vec<(Uuid, Uuid)>, Error> {
    let mut ids = Vec::with_capacity(answers.len());
    let mut leases = Vec::with_capacity(answers.len());
    let mut attempts = Vec::with_capacity(answers.len());
    let mut statuses = Vec::with_capacity(answers.len());
    let mut due = Vec::with_capacity(answers.len());
    let mut codes = Vec::with_capacity(answers.len());
    let mut errors = Vec::with_capacity(answers.len());
    for answer in answers {
        let (status, next) = answer.standing();
        ids.push(answer.delivery_id);
        leases.push(answer.lease_id);
        attempts.push(answer.attempt);
        statuses.push(status);
        due.push(next);
        codes.push(answer.attempted.status_code);
        errors.push(answer.attempted.error.clone());
    }
    Ok(sqlx::query_as(
        "UPDATE webhook_deliveries d SET attempts = a.attempt, status = a.status, \
           next_attempt_at = a.due, leased_until = NULL, lease_owner = NULL, lease_id = NULL, \
           last_status_code = a.code, \
           last_error = a.error, updated_at = now() \
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::int[], \
                     $6::text[], $7::uuid[]) AS a(id, attempt, status, due, code, error, lease) \
         WHERE d.id = a.id AND d.lease_id = a.lease AND d.attempts = a.attempt - 1 \
         RETURNING d.id, a.lease",
    )
    .bind(&ids)
    .bind(&attempts)
    .bind(&statuses)
    .bind(&due)
    .bind(&codes)
    .bind(&errors)
    .bind(&leases)
    .fetch_all(&mut **tx)
    .await?)
}

/// The attempt row of each recorded answer.
async fn attempt_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    recorded: &[&Answer],
) -> Result<(), Error> {
    let mut ids = Vec::with_capacity(recorded.len());
    let mut attempts = Vec::with_capacity(recorded.len());
    let mut codes = Vec::with_capacity(recorded.len());
    let mut errors = Vec::with_capacity(recorded.len());
    let mut started = Vec::with_capacity(recorded.len());
    let mut durations = Vec::with_capacity(recorded.len());
    let mut prefixes = Vec::with_capacity(recorded.len());
    for answer in recorded {
        ids.push(answer.delivery_id);
        attempts.push(answer.attempt);
        codes.push(answer.attempted.status_code);
        errors.push(answer.attempted.error.clone());
        started.push(answer.attempted.started_at);
        durations.push(answer.attempted.duration_ms as f32);
        prefixes.push(answer.attempted.response_prefix.clone());
    }
    sqlx::query(
        "INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, \
           status_code, error, response_prefix) \
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::real[], \
                              $5::int[], $6::text[], $7::text[]) \
         ON CONFLICT DO NOTHING",
    )
    .bind(&ids)
    .bind(&attempts)
    .bind(&started)
    .bind(&durations)
    .bind(&codes)
    .bind(&errors)
    .bind(&prefixes)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The notification to the tenant's admins that `answer`'s delivery was given up.
async fn notify_exhausted(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    answer: &Answer,
) -> Result<(), Error> {
    let data = json!({
        "deliveryId": answer.delivery_id,
        "endpointId": answer.endpoint_id,
        "eventId": answer.event_id,
        "eventType": answer.event_type,
        "attempts": answer.attempt,
        "lastStatusCode": answer.attempted.status_code,
        "lastError": answer.attempted.error,
    });
    sqlx::query(
        "INSERT INTO notifications (id, tenant_id, type, audience, data, source_id, created_at) \
         VALUES ($1, $2, 'webhook_delivery_exhausted', 'admins', $3, $4, now()) \
         ON CONFLICT (source_id) DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(answer.tenant_id)
    .bind(data)
    .bind(answer.delivery_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Gives back deliveries this worker could not sign (`(delivery, lease)`): due again a minute
/// later, no attempt counted.
pub(super) async fn unsigned(pool: &PgPool, given_back: &[(Uuid, Uuid)]) -> Result<(), Error> {
    let (ids, leases): (Vec<Uuid>, Vec<Uuid>) = given_back.iter().copied().unzip();
    sqlx::query(
        "UPDATE webhook_deliveries d SET leased_until = NULL, lease_owner = NULL, \
           lease_id = NULL, next_attempt_at = now() + make_interval(secs => $3) \
         FROM unnest($1::uuid[], $2::uuid[]) AS g(id, lease) \
         WHERE d.id = g.id AND d.lease_id = g.lease",
    )
    .bind(&ids)
    .bind(&leases)
    .bind(UNSIGNED_WAIT_SECONDS)
    .execute(pool)
    .await?;
    Ok(())
}
