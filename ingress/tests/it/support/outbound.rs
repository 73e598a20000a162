//! Outbound events as the stages emit them: a message on `outbound.events`, here produced by the
//! test itself (as the outbox relay does) so a delivery test needs no app's circuit to open.

use topics::outbound::Outbound;
use topics::{Cluster, Envelope, Principal, Producer};
use uuid::Uuid;

use super::stack;

/// Emits `message` for `tenant`; answers the event's id.
pub async fn emit(tenant: Uuid, message: Outbound) -> Uuid {
    let producer =
        Producer::new(&Cluster::read(&mut stack().env()), "outbound-test").expect("producer");
    let envelope = Envelope::new(
        Some(tenant),
        Principal::system("test"),
        "req-outbound-test",
        None,
        message,
    );
    producer.send(&envelope).await.expect("produced");
    envelope.id
}

/// An `app.circuit.opened` of app `app`.
pub fn circuit_opened(app: &str) -> Outbound {
    Outbound::CircuitOpened {
        app: app.to_owned(),
        failures: 5,
    }
}
