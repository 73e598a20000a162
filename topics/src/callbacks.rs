//! Vendor webhook events (SPEC §4.8, §6.3) on [`catalogue::CALLBACKS`], keyed by the callback
//! session they name, so one session has one writer and the first event that settles it wins.
//! The API produces an event once the session's module has read the webhook; the envelope's
//! `time` is when the webhook arrived and its tenant the session's. The stage answers what
//! recording it came to ([`Answer`]), and the webhook route answers the vendor from that: only
//! the one writer of the session knows which event settled it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::command::one_command;
use crate::labels::labels;
use crate::{Command, catalogue};

labels! {
    /// What the vendor says of the session (SPEC §6.3).
    pub enum EventStatus {
        Completed = "completed",
        Failed = "failed",
        /// Progress: recorded, the session stays pending.
        Pending = "pending",
    }
}

impl EventStatus {
    /// What the event settles a pending session to; `None` for progress.
    pub fn settles_to(self) -> Option<SessionStatus> {
        match self {
            EventStatus::Completed => Some(SessionStatus::Completed),
            EventStatus::Failed => Some(SessionStatus::Failed),
            EventStatus::Pending => None,
        }
    }

    /// Whether the event settles a pending session.
    pub fn settles(self) -> bool {
        self.settles_to().is_some()
    }
}

labels! {
    /// Where a callback session stands (SPEC §2.3).
    pub enum SessionStatus {
        Pending = "pending",
        Completed = "completed",
        Failed = "failed",
        TimedOut = "timed_out",
    }
}

labels! {
    /// What recording an event did to its session, as its row keeps it.
    pub enum Recorded {
        /// It settled the pending session.
        Settled = "settled",
        /// A `pending` event on a pending session: it keeps waiting.
        Accepted = "accepted",
        /// The session had settled before: nothing changed.
        Stale = "stale",
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

/// What recording an event came to, as the callbacks stage decided it under the session's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "recorded", rename_all = "snake_case")]
pub enum Answer {
    /// The event settled its pending session, to `status` (`completed` or `failed`).
    Settled { status: EventStatus },
    /// A `pending` event on a pending session: it keeps waiting.
    Accepted,
    /// The session had settled before (another event, its timeout, a cancel, a forced
    /// uninstall): recorded, nothing changed; `status` is the session's.
    Stale { status: SessionStatus },
    /// Another delivery of the vendor's event id was recorded before: nothing recorded.
    Duplicate,
}

impl Answer {
    /// The answer a recorded event got, from its row: what recording it did, the event's status
    /// and its session's status now.
    pub fn of_recording(recorded: Recorded, status: EventStatus, session: SessionStatus) -> Self {
        match recorded {
            Recorded::Settled => Answer::Settled { status },
            Recorded::Accepted => Answer::Accepted,
            Recorded::Stale => Answer::Stale { status: session },
        }
    }
}

impl Command for Event {
    type Body = Event;
    type Reply = Answer;

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::id_key(self.session_id)
    }
}

one_command!(Event on catalogue::CALLBACKS, version 1, replies 1);

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

    #[test]
    fn a_recorded_event_reads_back_as_the_answer_it_got() {
        assert_eq!(
            Answer::of_recording(
                Recorded::Settled,
                EventStatus::Failed,
                SessionStatus::Failed
            ),
            Answer::Settled {
                status: EventStatus::Failed
            }
        );
        assert_eq!(
            Answer::of_recording(
                Recorded::Accepted,
                EventStatus::Pending,
                SessionStatus::Pending
            ),
            Answer::Accepted
        );
        assert_eq!(
            Answer::of_recording(
                Recorded::Stale,
                EventStatus::Completed,
                SessionStatus::TimedOut
            ),
            Answer::Stale {
                status: SessionStatus::TimedOut
            }
        );
        assert_eq!(
            serde_json::to_value(Answer::Stale {
                status: SessionStatus::Completed
            })
            .expect("json"),
            json!({"recorded": "stale", "status": "completed"})
        );
        assert_eq!(EventStatus::parse("timed_out"), None);
    }
}
