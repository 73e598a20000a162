//! A delivery retried by hand (`POST /webhook-deliveries/:id/retry`): due now, with one attempt
//! more than it has had, whatever its status; the dispatcher sends it like any due delivery.
//! While an attempt is in flight (a dispatcher holds its lease) the retry is refused (409): the
//! attempt's answer would overwrite it.
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
    let standing: Option<bool> = sqlx::query_scalar(
        "SELECT coalesce(leased_until > now(), false) FROM webhook_deliveries \
         WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
    )
    .bind(tenant.id())
    .bind(delivery_id)
    .fetch_optional(&mut **tx)
    .await?;
    match standing {
        None => {
            return Ok(Outcome::refused(
                RefusalCode::NotFound,
                "No such webhook delivery.",
            ));
        }
        Some(true) => {
            return Ok(Outcome::refused(
                RefusalCode::Conflict,
                "An attempt of this delivery is in flight; retry once it is answered.",
            ));
        }
        Some(false) => {}
    }
    let (endpoint_id, event_type): (Uuid, String) = sqlx::query_as(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), \
         max_attempts = greatest(max_attempts, attempts + 1), updated_at = now() \
         WHERE tenant_id = $1 AND id = $2 RETURNING endpoint_id, event_type",
    )
    .bind(tenant.id())
    .bind(delivery_id)
    .fetch_one(&mut **tx)
    .await?;
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
