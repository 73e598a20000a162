//! Vendor webhook events (SPEC §4.8, §6.3) on [`catalogue::CALLBACKS`], keyed by the callback
//! session they name, so one session has one writer and the first event that settles it wins.
//! The API produces an event once the session's module has read the webhook; the envelope's
//! `time` is when the webhook arrived and its tenant the session's.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

/// What the vendor says of the session (SPEC §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    Completed,
    Failed,
    /// Progress: recorded, the session stays pending.
    Pending,
}

impl EventStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::Completed => "completed",
            EventStatus::Failed => "failed",
            EventStatus::Pending => "pending",
        }
    }

    /// Whether the event settles a pending session.
    pub fn settles(self) -> bool {
        !matches!(self, EventStatus::Pending)
    }
}

/// One vendor event for one callback session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub session_id: Uuid,
    pub app_name: String,
    pub external_id: String,
    /// The vendor's id of the event: unique per tenant and app, forever.
    pub event_id: String,
    pub status: EventStatus,
    /// A completed event's output, already checked against the action's output schema.
    pub output: Option<Value>,
    /// A failed event's reason in the vendor's words (kept on the session, never in the run).
    pub error: Option<String>,
}

impl Message for Event {
    const TOPIC: Topic = catalogue::CALLBACKS;
    const VERSION: u16 = 1;
    /// Nobody waits on a vendor's event: the webhook route answered once it was durable.
    type Answer = ();

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::id_key(self.session_id)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_are_keyed_by_their_session_and_read_back() {
        let session_id = Uuid::now_v7();
        let event = |event_id: &str, status| Event {
            session_id,
            app_name: "kyc".into(),
            external_id: "s-1".into(),
            event_id: event_id.into(),
            status,
            output: Some(json!({"verified": true})),
            error: None,
        };
        let completed = event("e-1", EventStatus::Completed);
        let failed = event("e-2", EventStatus::Failed);
        assert_eq!(completed.key(None), failed.key(Some(Uuid::now_v7())));
        let wire = serde_json::to_value(&completed).expect("serialises");
        assert_eq!(wire["status"], "completed");
        let back: Event = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, completed);
        assert!(EventStatus::Failed.settles() && !EventStatus::Pending.settles());
    }
}
