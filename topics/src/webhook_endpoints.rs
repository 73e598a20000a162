//! Commands of tenants' webhook endpoints (docs/outbound-webhooks.md), on
//! [`catalogue::WEBHOOK_ENDPOINTS`], keyed by tenant so a tenant's endpoints have one writer: created,
//! changed, their secret rotated, deleted; a delivery retried by hand. Signing secrets are
//! generated and sealed by the API ([`crate::sealed`]) and travel only sealed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::sealed::{Binding, Sealed};

topic_commands! {
    /// The commands of a tenant's webhook endpoints, keyed by the tenant.
    pub enum WebhookEndpointsCommand on catalogue::WEBHOOK_ENDPOINTS, version 1, replies 2,
        keyed |_command, tenant| catalogue::tenant_key(tenant);
    {
        Create => Endpoint,
        Update => Endpoint,
        RotateSecret => Endpoint,
        Delete => (),
        RetryDelivery => (),
    }
}

/// An endpoint as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: Uuid,
    pub url: String,
    /// The event types it receives; empty: every type.
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub description: String,
    /// Until when the secret before the last rotation still signs (24 hours after it).
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A new endpoint with its first signing secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Create {
    pub endpoint_id: Uuid,
    pub url: String,
    pub event_types: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub secret: Sealed,
}

/// What the request names changes; the rest stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update {
    pub endpoint_id: Uuid,
    pub url: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// `secret` signs from now on; the one before it still signs for 24 hours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RotateSecret {
    pub endpoint_id: Uuid,
    pub secret: Sealed,
}

/// The endpoint and its deliveries go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delete {
    pub endpoint_id: Uuid,
}

/// Delivery `delivery_id` is tried once more, now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryDelivery {
    pub delivery_id: Uuid,
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
