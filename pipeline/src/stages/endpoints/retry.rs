//! A delivery retried by hand (`POST /webhook-deliveries/:id/retry`): due now, with one attempt
//! more than it has had, whatever its status; the dispatcher sends it like any due delivery.
//! A delivery given up (`exhausted`) that fails again is given up again, without a second
//! notification.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::endpoints::{Answer, Command};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use crate::Error;
use crate::audit::{self, AuditEvent};

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: readers::Tenant,
    delivery_id: Uuid,
) -> Result<Outcome<Answer>, Error> {
    let retried: Option<(Uuid, String)> = sqlx::query_as(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), \
         max_attempts = greatest(max_attempts, attempts + 1), updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 RETURNING endpoint_id, event_type",
    )
    .bind(tenant.id())
    .bind(delivery_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((endpoint_id, event_type)) = retried else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such webhook delivery.",
        ));
    };
    let event = AuditEvent {
        action: "webhook_delivery.retried",
        subject_type: "webhook_delivery",
        subject_id: delivery_id.to_string(),
        payload: json!({"deliveryId": delivery_id, "endpointId": endpoint_id,
                        "eventType": event_type}),
    };
    audit::record(tx, command, event).await?;
    crate::dispatch::wake(tx).await?;
    Ok(Outcome::done(Answer::Retried { delivery_id }))
}
