//! A delivery retried by hand (`POST /webhook-deliveries/:id/retry`): due now (held, if its
//! endpoint is disabled, until it is enabled), `pending`; the dispatcher sends it like any due
//! delivery. One still on its schedule keeps the schedule's remaining attempts; one that
//! succeeded or was given up (`exhausted`) gets one attempt more, and if that fails it is
//! given up again, without a second notification. While an attempt is in flight (a dispatcher
//! holds its lease) the retry is refused (409): the attempt's answer would overwrite it. An
//! expired lease is cleared, so the late answer of a dispatcher that lost it records nothing.

use serde_json::json;
use topics::webhook_endpoints::RetryDelivery;
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::WebhookEndpointsStage;
use crate::Error;
use crate::audit::AuditEvent;
use crate::stage::{Context, applies};

applies!(WebhookEndpointsStage: RetryDelivery => apply);

async fn apply(cx: &mut Context, retry: &RetryDelivery) -> Result<Outcome<()>, Error> {
    let tenant = readers::Tenant::new(cx.tenant()?);
    let delivery_id = retry.delivery_id;
    let standing: Option<bool> = sqlx::query_scalar(
        "SELECT coalesce(leased_until > now(), false) FROM webhook_deliveries \
         WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
    )
    .bind(tenant.id())
    .bind(delivery_id)
    .fetch_optional(&mut *cx.tx)
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
        "UPDATE webhook_deliveries d SET status = 'pending', \
           next_attempt_at = CASE WHEN e.enabled THEN now() END, \
           max_attempts = CASE WHEN d.status IN ('succeeded', 'exhausted') \
             THEN d.attempts + 1 ELSE d.max_attempts END, \
           leased_until = NULL, lease_owner = NULL, lease_id = NULL, updated_at = now() \
         FROM webhook_endpoints e \
         WHERE d.tenant_id = $1 AND d.id = $2 AND e.id = d.endpoint_id \
         RETURNING d.endpoint_id, d.event_type",
    )
    .bind(tenant.id())
    .bind(delivery_id)
    .fetch_one(&mut *cx.tx)
    .await?;
    let event = AuditEvent {
        action: "webhook_delivery.retried",
        subject_type: "webhook_delivery",
        subject_id: delivery_id.to_string(),
        payload: json!({"deliveryId": delivery_id, "endpointId": endpoint_id,
                        "eventType": event_type}),
    };
    cx.audit(event);
    crate::webhook_deliveries::wake(&mut cx.tx).await?;
    Ok(Outcome::done(()))
}
