//! Who runs a backtest: the worker holding its lease (`lease_id`, `running_until`, migration
//! `20261203000002_backtests.sql`). Claiming takes an unfinished backtest whose lease is free
//! or expired and starts it afresh (progress 0, `attempts` + 1); every later write is
//! conditional on the lease, so a worker whose lease was taken over writes nothing more.

use std::time::Duration;

use readers::backtests::Summary;
use sqlx::PgPool;
use topics::backtests::{Sample, Target};
use uuid::Uuid;

use crate::Error;

/// How long a lease lasts without a progress write renewing it: how long a backtest whose
/// worker died waits before another starts it again.
pub(crate) const LEASE: Duration = Duration::from_secs(15);

/// Attempts after which a backtest is failed rather than started again.
pub(crate) const MAX_ATTEMPTS: i32 = 5;

/// A backtest this worker holds the lease of.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub(crate) id: Uuid,
    pub(crate) tenant: Uuid,
    pub(crate) target: Target,
    pub(crate) sample: Sample,
    lease: Uuid,
}

/// Where a backtest stands for a worker that wants to run it.
#[derive(Debug)]
pub(crate) enum Claim {
    Claimed(Claimed),
    /// Completed, failed, or never recorded (its `Start` was refused).
    Finished,
    /// Another worker's lease runs until then.
    HeldFor(Duration),
}

#[derive(Debug, sqlx::FromRow)]
struct Row {
    tenant_id: Uuid,
    kind: String,
    key: String,
    version: i32,
    last_days: i32,
    sample_limit: i32,
}

pub(crate) async fn claim(pool: &PgPool, id: Uuid) -> Result<Claim, Error> {
    let lease = Uuid::now_v7();
    let claimed: Option<Row> = sqlx::query_as(
        "UPDATE backtests SET status = 'running', lease_id = $2, \
           running_until = now() + make_interval(secs => $3), attempts = attempts + 1, \
           started_at = coalesce(started_at, now()), progress_done = 0, progress_total = 0, \
           engine_workflow_id = 'backtest-' || id || '/' || (attempts + 1) \
         WHERE id = $1 AND status IN ('queued', 'running') AND attempts < $4 \
           AND (running_until IS NULL OR running_until < now()) \
         RETURNING tenant_id, kind, key, version, last_days, sample_limit",
    )
    .bind(id)
    .bind(lease)
    .bind(LEASE.as_secs_f64())
    .bind(MAX_ATTEMPTS)
    .fetch_optional(pool)
    .await?;
    if let Some(row) = claimed {
        let target = match row.kind.as_str() {
            "rule" => Target::Rule {
                key: row.key,
                version: row.version,
            },
            "rule_set" => Target::RuleSet {
                key: row.key,
                version: row.version,
            },
            _ => Target::Workflow {
                key: row.key,
                version: row.version,
            },
        };
        return Ok(Claim::Claimed(Claimed {
            id,
            tenant: row.tenant_id,
            target,
            sample: Sample {
                last_days: row.last_days,
                limit: row.sample_limit,
            },
            lease,
        }));
    }
    let standing: Option<(String, i32, Option<f64>)> = sqlx::query_as(
        "SELECT status, attempts, extract(epoch FROM running_until - now())::float8 \
         FROM backtests WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(match standing {
        None => Claim::Finished,
        Some((status, _, _)) if matches!(status.as_str(), "completed" | "failed") => {
            Claim::Finished
        }
        Some((_, attempts, left)) if attempts >= MAX_ATTEMPTS && left.is_none_or(|s| s < 0.0) => {
            give_up(pool, id).await?;
            Claim::Finished
        }
        Some((_, _, left)) => Claim::HeldFor(Duration::from_secs_f64(
            left.unwrap_or(0.0).clamp(0.0, LEASE.as_secs_f64()) + 0.1,
        )),
    })
}

/// A backtest whose workers kept dying: failed, with why.
async fn give_up(pool: &PgPool, id: Uuid) -> Result<(), Error> {
    sqlx::query(
        "UPDATE backtests SET status = 'failed', finished_at = now(), lease_id = NULL, \
           running_until = NULL, \
           error = 'gave up after ' || attempts || ' attempts: each worker running it stopped' \
         WHERE id = $1 AND status IN ('queued', 'running') \
           AND (running_until IS NULL OR running_until < now())",
    )
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
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
        .bind(self.lease)
        .bind(i32::try_from(done).unwrap_or(i32::MAX))
        .bind(i32::try_from(total).unwrap_or(i32::MAX))
        .bind(LEASE.as_secs_f64())
        .execute(pool)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    pub(crate) async fn complete(&self, pool: &PgPool, summary: &Summary) -> Result<bool, Error> {
        let summary = serde_json::to_value(summary)
            .map_err(|error| Error::Contract(format!("a summary does not serialize: {error}")))?;
        self.finish(pool, "completed", Some(summary), None).await
    }

    pub(crate) async fn fail(&self, pool: &PgPool, error: &str) -> Result<bool, Error> {
        self.finish(pool, "failed", None, Some(error)).await
    }

    async fn finish(
        &self,
        pool: &PgPool,
        status: &str,
        summary: Option<serde_json::Value>,
        error: Option<&str>,
    ) -> Result<bool, Error> {
        let finished = sqlx::query(
            "UPDATE backtests SET status = $3, summary = $4, error = $5, finished_at = now(), \
               progress_done = CASE WHEN $3 = 'completed' THEN progress_total ELSE progress_done END, \
               lease_id = NULL, running_until = NULL \
             WHERE id = $1 AND lease_id = $2 AND status = 'running'",
        )
        .bind(self.id)
        .bind(self.lease)
        .bind(status)
        .bind(summary)
        .bind(error)
        .execute(pool)
        .await?;
        Ok(finished.rows_affected() == 1)
    }
}
