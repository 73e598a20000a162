//! The endpoints stage (docs/outbound-webhooks.md): one writer per tenant
//! (`endpoints.commands`) for the tenant's webhook endpoints ([`endpoint`]: created, changed,
//! the secret rotated, deleted) and the deliveries an admin retries by hand ([`retry`]). Each
//! change is audited in its transaction; secrets arrive sealed and are stored sealed.

mod endpoint;
mod retry;

use topics::endpoints::EndpointsCommand;

use crate::stage::Stage;

/// Applies the commands of the `endpoints.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct EndpointsStage;

impl Stage for EndpointsStage {
    type Body = EndpointsCommand;
    type Then = ();
    const NAME: &'static str = "endpoints";
}
