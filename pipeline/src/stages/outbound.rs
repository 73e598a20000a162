//! The outbound stage (SPEC §6.2; docs/outbound-webhooks.md): one writer per tenant
//! (`outbound.events`) records each outbound message once. A webhook event becomes a row of
//! `webhook_events` (keyed by the message's id, so a redelivery records nothing) and, in the
//! same transaction, one `pending` delivery per endpoint of the tenant subscribed to its type,
//! enabled or not: a disabled endpoint's deliveries wait for it. A notification becomes a row
//! of `notifications`. The dispatcher ([`crate::webhook_deliveries`]) sends the deliveries.
//!
//! No inbox and no replies: nobody waits on these, and the rows keyed by the message id are the
//! record of each having been applied. Queued messages of a partition apply in one transaction
//! ([`BATCH_LIMIT`]), so a burst costs one commit per batch.

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::outbound::{Audience, Outbound};
use topics::{Applied, Apply, Header, Outcome};
use uuid::Uuid;

use crate::Error;
use crate::stage::{Context, Stage};

const BATCH_LIMIT: usize = 64;

/// Applies [`Outbound`] messages of the `outbound.events` topic.
#[derive(Debug, Default)]
pub(crate) struct OutboundStage;

impl Stage for OutboundStage {
    type Body = Outbound;
    type Then = ();
    const NAME: &'static str = "outbound";
    const BATCH_LIMIT: usize = BATCH_LIMIT;
    const INBOX: bool = false;
    const REPLIES: bool = false;
}

#[async_trait]
impl Apply<Outbound, Context> for OutboundStage {
    async fn apply(&self, cx: &mut Context, message: &Outbound) -> Result<Applied<()>, Error> {
        let tenant = cx.tenant()?;
        match message.audience() {
            Audience::Endpoints => event(&mut cx.tx, tenant, &cx.command, message).await?,
            Audience::Everyone => notification(&mut cx.tx, tenant, &cx.command, message).await?,
        }
        Ok(Applied::from(Outcome::done(())))
    }
}

/// The event, once, and its deliveries to the endpoints subscribed to its type.
async fn event(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    header: &Header,
    message: &Outbound,
) -> Result<(), Error> {
    let name = message.name();
    let recorded = sqlx::query(
        "INSERT INTO webhook_events (id, tenant_id, type, data, occurred_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
    )
    .bind(header.id)
    .bind(tenant)
    .bind(name)
    .bind(message.data())
    .bind(header.time)
    .execute(&mut **tx)
    .await?;
    if recorded.rows_affected() == 0 {
        return Ok(());
    }
    let endpoints: Vec<(Uuid, bool)> = sqlx::query_as(
        "SELECT id, enabled FROM webhook_endpoints WHERE tenant_id = $1 \
         AND (event_types = '{}' OR $2 = ANY(event_types)) FOR KEY SHARE",
    )
    .bind(tenant)
    .bind(name)
    .fetch_all(&mut **tx)
    .await?;
    if endpoints.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = endpoints.iter().map(|_| Uuid::now_v7()).collect();
    let (endpoint_ids, enabled): (Vec<Uuid>, Vec<bool>) = endpoints.into_iter().unzip();
    // A disabled endpoint's delivery waits without a due time until it is enabled. The
    // endpoints read are kept from deletion until the deliveries are in (FOR KEY SHARE: a
    // delete committed meanwhile would fail the insert and the whole event with it), but not
    // from an enable or a disable, which must not wait behind events: one committed between
    // this read and the insert leaves a delivery held on an enabled endpoint, or due on a
    // disabled one, and the dispatchers' sweep (`webhook_deliveries::release`) sets those right.
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, \
         status, next_attempt_at, created_at, updated_at) \
         SELECT id, $4, endpoint_id, $5, $6, 'pending', CASE WHEN enabled THEN now() END, \
           now(), now() \
         FROM unnest($1::uuid[], $2::uuid[], $3::bool[]) AS d(id, endpoint_id, enabled) \
         ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    )
    .bind(&ids)
    .bind(&endpoint_ids)
    .bind(&enabled)
    .bind(tenant)
    .bind(header.id)
    .bind(name)
    .execute(&mut **tx)
    .await?;
    crate::webhook_deliveries::wake(tx).await
}

/// The notification, once, for everyone who reads the tenant's.
async fn notification(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    header: &Header,
    message: &Outbound,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO notifications (id, tenant_id, type, audience, data, source_id, created_at) \
         VALUES ($1, $2, $3, 'everyone', $4, $5, $6) ON CONFLICT (source_id) DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(tenant)
    .bind(message.name())
    .bind(message.data())
    .bind(header.id)
    .bind(header.time)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
