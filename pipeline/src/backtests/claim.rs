//! Who runs a backtest: the worker holding its lease (`crate::lease`; `lease_id`,
//! `running_until`, migration `20261203000002_backtests.sql`). The backtests stage records a backtest `queued` with a
//! lease already held for the worker that recorded it ([`RESERVED`]), which starts it
//! ([`claim_reserved`]); any worker's sweep takes one whose lease expired ([`claim_next`]).
//! Claiming starts the backtest afresh (progress 0, `attempts` + 1); every later write is
//! conditional on the lease, so a worker whose lease was taken over writes nothing more.

use std::time::Duration;

use sqlx::{PgPool, Postgres, Transaction};
use topics::backtests::Summary;
use topics::backtests::{Sample, Target};
use uuid::Uuid;

use crate::Error;
use crate::lease::{BACKTESTS, Lease};

/// How long a lease lasts without a progress write renewing it: how long a backtest whose
/// worker died waits before a sweep starts it again.
pub(crate) const LEASE: Duration = Duration::from_secs(15);

/// How long a just-recorded backtest is kept for the worker that recorded it.
pub(crate) const RESERVED: Duration = LEASE;

/// Attempts after which a backtest is failed rather than started again.
pub(crate) const MAX_ATTEMPTS: i32 = 5;

/// After a failed attempt, the next waits this long times the attempts made.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// A backtest this worker holds the lease of.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub(crate) id: Uuid,
    pub(crate) tenant: Uuid,
    pub(crate) target: Target,
    pub(crate) sample: Sample,
    lease: Lease,
}

#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    tenant_id: Uuid,
    kind: String,
    key: String,
    version: i32,
    last_days: i32,
    sample_limit: i32,
}

/// What a claim sets, with `$1` the lease it takes for `$2` seconds.
fn claim() -> String {
    format!(
        "UPDATE backtests SET status = 'running', {}, attempts = attempts + 1, \
           started_at = coalesce(started_at, now()), progress_done = 0, progress_total = 0, \
           engine_workflow_id = 'backtest-' || id || '/' || (attempts + 1)",
        BACKTESTS.take(1, 2)
    )
}
const CLAIMED: &str = "RETURNING id, tenant_id, kind, key, version, last_days, sample_limit";

/// Records, within the stage's transaction, that the backtest just inserted is this
/// worker's for [`RESERVED`]; answers the lease.
pub(crate) async fn reserve(tx: &mut Transaction<'_, Postgres>, id: Uuid) -> Result<Uuid, Error> {
    let lease = Uuid::now_v7();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE backtests SET {} WHERE id = $1",
        BACKTESTS.take(2, 3)
    )))
    .bind(id)
    .bind(lease)
    .bind(RESERVED.as_secs_f64())
    .execute(&mut **tx)
    .await?;
    Ok(lease)
}

/// Starts backtest `id` under the lease its recording reserved, unless that expired.
pub(crate) async fn claim_reserved(
    pool: &PgPool,
    id: Uuid,
    lease: Uuid,
) -> Result<Option<Claimed>, Error> {
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{} WHERE id = $3 AND lease_id = $1 AND status = 'queued' \
           AND running_until > now() {CLAIMED}",
        claim()
    )))
    .bind(lease)
    .bind(LEASE.as_secs_f64())
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row.and_then(|row| claimed(row, lease)))
}

/// Starts the oldest unfinished backtest whose lease is free or expired, if any.
pub(crate) async fn claim_next(pool: &PgPool) -> Result<Option<Claimed>, Error> {
    let lease = Uuid::now_v7();
    let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{} WHERE id = (SELECT id FROM backtests \
           WHERE status IN ('queued', 'running') AND attempts < $3 AND {} \
           ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) {CLAIMED}",
        claim(),
        BACKTESTS.free("")
    )))
    .bind(lease)
    .bind(LEASE.as_secs_f64())
    .bind(MAX_ATTEMPTS)
    .fetch_optional(pool)
    .await?;
    Ok(row.and_then(|row| claimed(row, lease)))
}

fn claimed(row: Row, lease: Uuid) -> Option<Claimed> {
    // The table's CHECK allows no other kind.
    let target = Target::of(&row.kind, row.key, row.version)?;
    Some(Claimed {
        id: row.id,
        tenant: row.tenant_id,
        target,
        sample: Sample {
            last_days: row.last_days,
            limit: row.sample_limit,
        },
        lease: Lease::new(&BACKTESTS, row.id, lease, LEASE),
    })
}

/// Fails the backtests whose every attempt ended without a result and whose last lease
/// expired, with why; answers how many.
pub(crate) async fn give_up_exhausted(pool: &PgPool) -> Result<u64, Error> {
    let failed = sqlx::query(
        "UPDATE backtests SET status = 'failed', finished_at = now(), lease_id = NULL, \
           running_until = NULL, \
           error = 'gave up after ' || attempts || ' attempts: ' \
                   || coalesce(error, 'each worker running it stopped') \
         WHERE status IN ('queued', 'running') AND attempts >= $1 \
           AND (running_until IS NULL OR running_until < now())",
    )
    .bind(MAX_ATTEMPTS)
    .execute(pool)
    .await?;
    Ok(failed.rows_affected())
}

impl Claimed {
    /// Records progress and renews the lease; `false` when the lease is no longer this
    /// worker's.
    pub(crate) async fn progress(
        &self,
        pool: &PgPool,
        done: usize,
        total: usize,
    ) -> Result<bool, Error> {
        let renewed = sqlx::query(
            "UPDATE backtests SET progress_done = $3, progress_total = $4, \
               running_until = now() + make_interval(secs => $5) \
             WHERE id = $1 AND lease_id = $2 AND status = 'running'",
        )
        .bind(self.id)
        .bind(self.lease.id)
        .bind(i32::try_from(done).unwrap_or(i32::MAX))
        .bind(i32::try_from(total).unwrap_or(i32::MAX))
        .bind(LEASE.as_secs_f64())
        .execute(pool)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Completed with `summary`, over `done` evaluations.
    pub(crate) async fn complete(
        &self,
        pool: &PgPool,
        summary: &Summary,
        done: usize,
    ) -> Result<bool, Error> {
        let summary = serde_json::to_value(summary)
            .map_err(|error| Error::Contract(format!("a summary does not serialize: {error}")))?;
        let done = i32::try_from(done).unwrap_or(i32::MAX);
        self.finish(pool, ("completed", Some(done)), Some(summary), None)
            .await
    }

    pub(crate) async fn fail(&self, pool: &PgPool, error: &str) -> Result<bool, Error> {
        self.finish(pool, ("failed", None), None, Some(error)).await
    }

    /// Renews the lease; `false` when it is no longer this worker's.
    pub(crate) async fn renew(&self, pool: &PgPool) -> Result<bool, Error> {
        self.lease.renew(pool).await
    }

    /// The worker stops: the lease expires now and the attempt is not counted, so the next
    /// worker's sweep starts the backtest at once.
    pub(crate) async fn give_back(&self, pool: &PgPool) -> Result<(), Error> {
        sqlx::query(
            "UPDATE backtests SET running_until = now(), attempts = greatest(attempts - 1, 0) \
             WHERE id = $1 AND lease_id = $2 AND status = 'running'",
        )
        .bind(self.id)
        .bind(self.lease.id)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// An attempt that could not go on (the database went away): its error kept, the lease
    /// given back to expire after a delay growing with the attempts, when a sweep tries again.
    pub(crate) async fn release(&self, pool: &PgPool, error: &str) -> Result<(), Error> {
        sqlx::query(
            "UPDATE backtests SET error = $3, \
               running_until = now() + make_interval(secs => $4 * attempts) \
             WHERE id = $1 AND lease_id = $2 AND status = 'running'",
        )
        .bind(self.id)
        .bind(self.lease.id)
        .bind(error)
        .bind(RETRY_AFTER.as_secs_f64())
        .execute(pool)
        .await?;
        Ok(())
    }

    /// Ends the attempt `status`, its progress `done` of `done` when given.
    async fn finish(
        &self,
        pool: &PgPool,
        (status, done): (&str, Option<i32>),
        summary: Option<serde_json::Value>,
        error: Option<&str>,
    ) -> Result<bool, Error> {
        let finished = sqlx::query(
            "UPDATE backtests SET status = $3, summary = $4, error = $5, finished_at = now(), \
               progress_done = coalesce($6, progress_done), \
               progress_total = coalesce($6, progress_total), \
               lease_id = NULL, running_until = NULL \
             WHERE id = $1 AND lease_id = $2 AND status = 'running'",
        )
        .bind(self.id)
        .bind(self.lease.id)
        .bind(status)
        .bind(summary)
        .bind(error)
        .bind(done)
        .execute(pool)
        .await?;
        Ok(finished.rows_affected() == 1)
    }
}
