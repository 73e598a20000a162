//! Outbound events and notifications (SPEC §6.2; docs/outbound-webhooks.md), on
//! [`catalogue::OUTBOUND`], keyed by tenant. Stages write them to the outbox where they happen,
//! in the transaction that makes them true; the outbound stage records each once, with one
//! delivery per subscribed endpoint, or as a notification.
//!
//! The catalogue of webhook event types (each delivered as `{id, type, timestamp, tenantId,
//! data}`), with their `data`:
//! - `app.circuit.opened`: `{appName, failures}`: an app's circuit opened (SPEC §3.7);
//! - `app.circuit.closed`: `{appName}`: it closed again after a successful call.
//!
//! Notifications: `app_degraded` `{appName}` when a circuit opens (everyone who reads the
//! tenant's notifications); `webhook_delivery_exhausted` (admins) is written by the dispatcher
//! itself when a delivery is given up.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::command::one_command;
use crate::{Command, catalogue};

/// The webhook event types endpoints may subscribe to, in the order the API lists them.
pub const EVENT_TYPES: &[EventType] = &[
    EventType {
        name: "app.circuit.opened",
        description: "An app's circuit opened after five failed calls in a row: calls to it fail \
                      at once for 30 seconds, then one trial call decides.",
    },
    EventType {
        name: "app.circuit.closed",
        description: "An app's circuit closed again: a call succeeded.",
    },
];

/// A webhook event type of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EventType {
    pub name: &'static str,
    pub description: &'static str,
}

/// Whether `name` is a webhook event type of the catalogue.
pub fn is_event_type(name: &str) -> bool {
    EVENT_TYPES.iter().any(|event| event.name == name)
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Outbound {
    /// The webhook event `app.circuit.opened`.
    #[serde(rename = "app.circuit.opened")]
    CircuitOpened { app: String, failures: i32 },
    /// The webhook event `app.circuit.closed`.
    #[serde(rename = "app.circuit.closed")]
    CircuitClosed { app: String },
    /// The notification `app_degraded`.
    #[serde(rename = "app_degraded")]
    AppDegraded { app: String },
}

/// Where an outbound message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Every endpoint of the tenant subscribed to the type.
    Endpoints,
    /// Everyone who reads the tenant's notifications.
    Everyone,
}

impl Outbound {
    /// Its type, as the catalogue names it.
    pub fn name(&self) -> &'static str {
        match self {
            Outbound::CircuitOpened { .. } => "app.circuit.opened",
            Outbound::CircuitClosed { .. } => "app.circuit.closed",
            Outbound::AppDegraded { .. } => "app_degraded",
        }
    }

    pub fn audience(&self) -> Audience {
        match self {
            Outbound::CircuitOpened { .. } | Outbound::CircuitClosed { .. } => Audience::Endpoints,
            Outbound::AppDegraded { .. } => Audience::Everyone,
        }
    }

    /// The event's or notification's `data`, as the catalogue documents it.
    pub fn data(&self) -> Value {
        match self {
            Outbound::CircuitOpened { app, failures } => {
                json!({"appName": app, "failures": failures})
            }
            Outbound::CircuitClosed { app } | Outbound::AppDegraded { app } => {
                json!({"appName": app})
            }
        }
    }
}

impl Command for Outbound {
    type Body = Outbound;
    /// Nobody waits on one: it is recorded.
    type Reply = ();

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

one_command!(Outbound on catalogue::OUTBOUND, version 1, replies 1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_messages_are_keyed_by_tenant_and_keep_their_wire_shape() {
        let tenant = Uuid::now_v7();
        let opened = Outbound::CircuitOpened {
            app: "kyc".into(),
            failures: 5,
        };
        assert_eq!(opened.key(Some(tenant)), tenant.to_string().into_bytes());
        // Version 1 as the circuits stage has written it since before this catalogue.
        assert_eq!(
            serde_json::to_value(&opened).expect("serialises"),
            json!({"type": "app.circuit.opened", "app": "kyc", "failures": 5})
        );
    }

    #[test]
    fn every_webhook_event_is_in_the_catalogue_under_its_name() {
        let app = String::from("kyc");
        for outbound in [
            Outbound::CircuitOpened {
                app: app.clone(),
                failures: 5,
            },
            Outbound::CircuitClosed { app: app.clone() },
            Outbound::AppDegraded { app },
        ] {
            let wire = serde_json::to_value(&outbound).expect("serialises");
            assert_eq!(wire["type"], outbound.name());
            assert_eq!(
                is_event_type(outbound.name()),
                outbound.audience() == Audience::Endpoints
            );
            assert_eq!(outbound.data()["appName"], "kyc");
        }
    }
}
