//! Keeps the monthly partitions of `app_invocations` created ahead of time: there is no default
//! partition, so a row of a month without one would fail its insert. Workers starting together
//! take turns in `app_invocations_ensure_partitions` (an advisory lock), so each month is
//! created once.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::job::Job;
use crate::{Error, periodic};

/// Months created ahead, counting the current one.
const MONTHS_AHEAD: i32 = 3;
const EVERY: Duration = Duration::from_secs(6 * 3600);

pub(crate) async fn ensure(pool: &PgPool) -> Result<(), Error> {
    sqlx::query("SELECT app_invocations_ensure_partitions(now()::date, $1)")
        .bind(MONTHS_AHEAD)
        .execute(pool)
        .await?;
    Ok(())
}

/// The job: re-checks every few hours until stopped (start-up ensured them already).
pub(crate) struct Partitions {
    pub(crate) pool: PgPool,
}

impl Job for Partitions {
    async fn run(self, stop: CancellationToken) {
        periodic::every(EVERY, EVERY, stop, || async {
            if let Err(error) = ensure(&self.pool).await {
                tracing::warn!(%error, "invocation partitions not ensured");
            }
        })
        .await;
    }
}
