//! Folds the changes writers appended to the kept counts' change tables into the counts every
//! second, so a list's total adds up a few rows per tenant and key rather than one per
//! statement that ever moved a row:
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

use crate::periodic;

const EVERY: Duration = Duration::from_secs(1);

/// The kept counts: what each is called in logs, and its fold.
const FOLDS: [(&str, &str); 2] = [
    (
        "callback session counts",
        "SELECT app_callback_session_counts_fold()",
    ),
    ("audit event counts", "SELECT audit_event_counts_fold()"),
];

/// Folds every kept count every second until stopped.
pub(crate) async fn maintain(pool: PgPool, stop: CancellationToken) {
    periodic::every(EVERY, EVERY, stop, || async {
        for (counts, fold) in FOLDS {
            match sqlx::query_scalar::<_, i64>(fold).fetch_one(&pool).await {
                Ok(folded) => tracing::debug!(folded, counts, "kept counts folded"),
                Err(error) => tracing::warn!(%error, counts, "kept counts not folded"),
            }
        }
    })
    .await;
}
