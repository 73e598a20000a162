//! Folds the changes writers appended to `app_callback_session_count_changes` into
//! `app_callback_session_counts` (the totals of `GET /app-callbacks`) every second, so a total
//! adds up a few rows per tenant, app and status rather than one per statement that ever moved a
//! session. The fold is the database's own function, `app_callback_session_counts_fold`
//! (migration `20261201000002_callback_session_counts.sql`, which says why it is safe beside
//! readers, writers and another pipeline's fold).

use std::time::Duration;

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::{Error, periodic};

const EVERY: Duration = Duration::from_secs(1);

/// Folds the changes seen now; answers how many change rows it folded.
async fn fold(pool: &PgPool) -> Result<i64, Error> {
    let folded = sqlx::query_scalar("SELECT app_callback_session_counts_fold()")
        .fetch_one(pool)
        .await?;
    Ok(folded)
}

/// Folds every second until stopped.
pub(crate) async fn maintain(pool: PgPool, stop: CancellationToken) {
    periodic::every(EVERY, EVERY, stop, || async {
        match fold(&pool).await {
            Ok(folded) => tracing::debug!(folded, "callback session counts folded"),
            Err(error) => tracing::warn!(%error, "callback session counts not folded"),
        }
    })
    .await;
}
