//! Commands of tenants' webhook endpoints (README "Outbound webhooks"), on
//! [`catalogue::ENDPOINTS`], keyed by tenant so a tenant's endpoints have one writer: created,
//! changed, their secret rotated, deleted; a delivery retried by hand. Signing secrets are
//! generated and sealed by the API ([`crate::sealed`]) and travel only sealed.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::sealed::{Binding, Sealed};
use crate::{Message, Topic, catalogue};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A new endpoint with its first signing secret.
    Create {
        endpoint_id: Uuid,
        url: String,
        event_types: Vec<String>,
        description: String,
        enabled: bool,
        secret: Sealed,
    },
    /// What the request names changes; the rest stays.
    Update {
        endpoint_id: Uuid,
        url: Option<String>,
        event_types: Option<Vec<String>>,
        description: Option<String>,
        enabled: Option<bool>,
    },
    /// `secret` signs from now on; the one before it still signs for 24 hours.
    RotateSecret { endpoint_id: Uuid, secret: Sealed },
    /// The endpoint and its deliveries go.
    Delete { endpoint_id: Uuid },
    /// Delivery `delivery_id` is tried once more, now.
    RetryDelivery { delivery_id: Uuid },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Endpoint(readers::webhook_endpoints::Endpoint),
    Deleted,
    Retried { delivery_id: Uuid },
}

/// What an endpoint's signing secret is sealed to: a sealed secret copied onto another
/// endpoint's row does not open. `@` starts no app name, so these never collide with app
/// secrets.
pub fn secret_binding(tenant: Uuid, endpoint: &str) -> Binding<'_> {
    Binding {
        tenant,
        app: "@webhook-endpoint",
        name: endpoint,
    }
}

impl Message for Command {
    const TOPIC: Topic = catalogue::ENDPOINTS;
    const VERSION: u16 = 1;
    type Answer = Answer;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}
