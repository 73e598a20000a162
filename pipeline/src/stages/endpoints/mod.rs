//! The endpoints stage (README "Outbound webhooks"): one writer per tenant
//! (`endpoints.commands`) for the tenant's webhook endpoints ([`endpoint`]: created, changed,
//! the secret rotated, deleted) and the deliveries an admin retries by hand ([`retry`]). Each
//! change is audited in its transaction; secrets arrive sealed and are stored sealed.

mod endpoint;
mod retry;

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::endpoints::{Answer, Command};
use topics::{Envelope, Outcome};

use crate::Error;
use crate::stage::{Applied, Stage, tenant_of};

/// Applies [`Command`]s of the `endpoints.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct EndpointsStage;

#[async_trait]
impl Stage for EndpointsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "endpoints";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Answer>, Error> {
        outcome(tx, command).await.map(Applied::from)
    }
}

async fn outcome(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
) -> Result<Outcome<Answer>, Error> {
    let tenant = readers::Tenant::new(tenant_of::<EndpointsStage>(command)?);
    match &command.body {
        Command::Create { .. } => endpoint::create(tx, command, tenant).await,
        Command::Update { .. } => endpoint::update(tx, command, tenant).await,
        Command::RotateSecret {
            endpoint_id,
            secret,
        } => endpoint::rotate(tx, command, tenant, (*endpoint_id, secret)).await,
        Command::Delete { endpoint_id } => {
            endpoint::delete(tx, command, tenant, *endpoint_id).await
        }
        Command::RetryDelivery { delivery_id } => {
            retry::apply(tx, command, tenant, *delivery_id).await
        }
    }
}
