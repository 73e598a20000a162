//! Folds the changes writers appended to the kept counts' change tables into the counts every
//! second while there are changes (at rest less and less often, up to every [`IDLE`]), so a
//! list's total adds up a few rows per tenant and key rather than one per statement that ever
//! moved a row:
//! - `app_callback_session_counts` (the totals of `GET /app-callbacks`; migration
//!   `20261201000002_callback_session_counts.sql`, which says why a fold is safe beside readers,
//!   writers and another pipeline's fold);
//! - `audit_event_counts` (the totals of `GET /audit-events`; migration
//!   `20261202000007_audit_event_counts.sql`).
//!
//! Each fold is the database's own function; one failing leaves the others to run.

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::job::Job;

/// How often the counts are folded while writers append changes.
const EVERY: Duration = Duration::from_secs(1);
/// The longest wait between folds at rest: each fold that finds nothing doubles the wait up to
/// this. A total is exact whether or not a fold ran (a reader adds the changes not yet folded),
/// so waiting longer only leaves a reader a few more change rows to add: at rest there are
/// none, and the first write after it is folded within this (two statements a second at rest
/// before, most of what an idle pipeline sent Postgres beside the timers).
const IDLE: Duration = Duration::from_secs(8);

/// The kept counts: what each is called in logs, and its fold.
const FOLDS: [(&str, &str); 2] = [
    (
        "callback session counts",
        "SELECT app_callback_session_counts_fold()",
    ),
    ("audit event counts", "SELECT audit_event_counts_fold()"),
];

/// The job: folds every kept count until stopped, every second while changes come, backing
/// off to [`IDLE`] while none do.
pub(crate) struct KeptCounts {
    pub(crate) pool: PgPool,
}

impl Job for KeptCounts {
    async fn run(self, stop: CancellationToken) {
        let pool = self.pool;
        let mut wait = EVERY;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            let mut changed = false;
            for (counts, fold) in FOLDS {
                match sqlx::query_scalar::<_, i64>(fold).fetch_one(&pool).await {
                    Ok(folded) => {
                        changed |= folded > 0;
                        tracing::debug!(folded, counts, "kept counts folded");
                    }
                    // A failed fold leaves its changes for the next, at the usual pace.
                    Err(error) => {
                        changed = true;
                        tracing::warn!(%error, counts, "kept counts not folded");
                    }
                }
            }
            wait = next_wait(wait, changed);
        }
    }
}

/// The wait before the next fold: a second after one that folded something (or failed),
/// twice the last one, up to [`IDLE`], after one that found nothing.
fn next_wait(last: Duration, changed: bool) -> Duration {
    if changed { EVERY } else { (last * 2).min(IDLE) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_back_off_at_rest_and_return_to_every_second_with_changes() {
        let mut wait = EVERY;
        let idle: Vec<u64> = (0..5)
            .map(|_| {
                wait = next_wait(wait, false);
                wait.as_secs()
            })
            .collect();
        assert_eq!(idle, [2, 4, 8, 8, 8]);
        assert_eq!(next_wait(wait, true), EVERY);
    }
}
