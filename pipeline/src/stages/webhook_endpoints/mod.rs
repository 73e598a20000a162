//! The webhook endpoints stage (docs/outbound-webhooks.md): one writer per tenant
//! (`webhook_endpoints.commands`) for the tenant's webhook endpoints ([`endpoint`]: created,
//! changed, the secret rotated, deleted) and the deliveries an admin retries by hand
//! ([`retry`]). Each change is audited in its transaction; secrets arrive sealed and are stored
//! sealed. What ingresses of 0.1 wrote to `endpoints.commands` is applied too
//! ([`crate::stages::Consuming::spawn_former`]).

mod endpoint;
mod retry;

use topics::webhook_endpoints::WebhookEndpointsCommand;

use crate::stage::Stage;

/// Applies the commands of the `webhook_endpoints.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct WebhookEndpointsStage;

impl Stage for WebhookEndpointsStage {
    type Body = WebhookEndpointsCommand;
    type Then = ();
    const NAME: &'static str = "webhook_endpoints";
}
