//! Setting held deliveries right: a disabled endpoint's deliveries wait without a due time, and
//! enabling or disabling it moves them in the same transaction. A delivery the outbound stage
//! recorded while that committed can miss it (the stage read the endpoint before the change,
//! the change did not see the delivery yet): every [`RELEASE_EVERY`] each dispatcher releases
//! the held deliveries of enabled endpoints (reading the index of held deliveries) and holds
//! the due deliveries of disabled ones (reading the index of due ones), which claims would
//! otherwise step over on every read. Both indexes hold only deliveries not yet settled: a
//! backlog at most, never the history.

use std::time::Duration;

use sqlx::PgPool;

use crate::Error;

/// How often held deliveries are set right.
pub(super) const RELEASE_EVERY: Duration = Duration::from_secs(30);

/// Makes due the held deliveries of endpoints that are enabled, and holds the due deliveries
/// of endpoints that are disabled (not those in flight); answers how many moved.
pub(super) async fn held_deliveries(pool: &PgPool) -> Result<u64, Error> {
    let released = sqlx::query(
        "UPDATE webhook_deliveries d SET next_attempt_at = now(), updated_at = now() \
         FROM webhook_endpoints e \
         WHERE e.id = d.endpoint_id AND e.enabled \
           AND d.next_attempt_at IS NULL AND d.status IN ('pending', 'failed')",
    )
    .execute(pool)
    .await?;
    let held = sqlx::query(
        "UPDATE webhook_deliveries d SET next_attempt_at = NULL, updated_at = now() \
         FROM webhook_endpoints e \
         WHERE e.id = d.endpoint_id AND NOT e.enabled AND d.next_attempt_at IS NOT NULL \
           AND (d.leased_until IS NULL OR d.leased_until < now())",
    )
    .execute(pool)
    .await?;
    Ok(released.rows_affected() + held.rows_affected())
}
