//! Prunes the per-minute rollup behind `GET /apps/health` (`app_invocation_minutes`, written by
//! the triggers of `app_invocations`): the route looks back a day at most, so minutes older
//! than two days are deleted every hour.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::job::Job;
use crate::{Error, periodic};

const EVERY: Duration = Duration::from_secs(3600);

async fn prune(pool: &PgPool) -> Result<u64, Error> {
    let deleted =
        sqlx::query("DELETE FROM app_invocation_minutes WHERE minute < now() - interval '2 days'")
            .execute(pool)
            .await?;
    Ok(deleted.rows_affected())
}

/// The job: prunes now and every hour until stopped.
pub(crate) struct HealthMinutes {
    pub(crate) pool: PgPool,
}

impl Job for HealthMinutes {
    async fn run(self, stop: CancellationToken) {
        periodic::every(Duration::ZERO, EVERY, stop, || async {
            match prune(&self.pool).await {
                Ok(deleted) => tracing::debug!(deleted, "health minutes pruned"),
                Err(error) => tracing::warn!(%error, "health minutes not pruned"),
            }
        })
        .await;
    }
}
