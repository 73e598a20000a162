//! Releasing held deliveries: a disabled endpoint's deliveries wait without a due time, and
//! enabling it makes them due in the same transaction. A delivery the outbound stage recorded
//! while the enable committed can miss that (the stage read the endpoint disabled, the enable
//! did not see the delivery yet): each dispatcher releases such deliveries every
//! [`RELEASE_EVERY`], reading only the small index of held deliveries.

use std::time::Duration;

use sqlx::PgPool;

use crate::Error;

/// How often held deliveries of enabled endpoints are looked for.
pub(super) const RELEASE_EVERY: Duration = Duration::from_secs(30);

/// Makes due the held deliveries of endpoints that are enabled; answers how many.
pub(super) async fn held_of_enabled(pool: &PgPool) -> Result<u64, Error> {
    let released = sqlx::query(
        "UPDATE webhook_deliveries d SET next_attempt_at = now(), updated_at = now() \
         FROM webhook_endpoints e \
         WHERE e.id = d.endpoint_id AND e.enabled \
           AND d.next_attempt_at IS NULL AND d.status IN ('pending', 'failed')",
    )
    .execute(pool)
    .await?;
    Ok(released.rows_affected())
}
