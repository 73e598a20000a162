//! The reply every command gets (ARCHITECTURE "Write path" rule 5): the outcome the stage
//! applied, or that the command was dead-lettered. An outcome is either what the command did
//! ([`Outcome::Done`]) or why the stage refused it ([`Outcome::Refused`]): a refusal is decided
//! by the stage from the state it holds, recorded like an effect, so a redelivery gets the same
//! answer. Stages publish the reply on the command's channel; the route that produced the
//! command waits on that channel, and recovers a missed reply from the inbox, which holds the
//! same value.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reply {
    /// The stage applied the command (now or before) with this outcome.
    Applied { outcome: Outcome },
    /// The command could never apply and went to the dead-letter topic.
    DeadLettered { reason: String },
}

/// What applying a command came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// The effect happened; `value` is what the route answers (the record as it now is).
    Done { value: Value },
    /// The stage refused the command: nothing changed but the inbox row.
    Refused(Refusal),
}

impl Outcome {
    pub fn done(value: impl Serialize) -> Self {
        Outcome::Done {
            value: serde_json::to_value(value).unwrap_or(Value::Null),
        }
    }

    pub fn refused(code: RefusalCode, message: impl Into<String>) -> Self {
        Outcome::Refused(Refusal {
            code,
            message: message.into(),
            details: None,
        })
    }

    pub fn refused_with(code: RefusalCode, message: impl Into<String>, details: Value) -> Self {
        Outcome::Refused(Refusal {
            code,
            message: message.into(),
            details: Some(details),
        })
    }
}

/// Why a stage refused a command, in the terms of SPEC §7.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub code: RefusalCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// The error codes a stage can answer (SPEC §7); the API turns each into its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// 404: the record is absent (or another tenant's).
    NotFound,
    /// 409: a name and version the tenant already has, a status the call does not apply to,
    /// an open request.
    Conflict,
    /// 403: the requester approving their own publish request under four-eyes.
    FourEyes,
    /// 409: enabling an install while a secret has no value.
    AppNotConfigured,
    /// 409: uninstalling while runs wait on callbacks.
    AppInUse,
    /// 400: the command names something the stage found invalid (`details.issues`), for
    /// example an app rule calling an asynchronous action.
    ValidationError,
}

/// The Redis channel on which the reply to `command_id` is published.
pub fn channel(command_id: Uuid) -> String {
    format!("{CHANNEL_PREFIX}{command_id}")
}

/// What every reply channel starts with: a listener subscribes to `reply:*` once.
pub const CHANNEL_PREFIX: &str = "reply:";

/// The command id a reply channel names.
pub fn command_of(channel: &str) -> Option<Uuid> {
    Uuid::try_parse(channel.strip_prefix(CHANNEL_PREFIX)?).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn replies_say_what_happened() {
        let applied = Reply::Applied {
            outcome: Outcome::done(json!({ "versionId": "v" })),
        };
        assert_eq!(
            serde_json::to_value(&applied).expect("json"),
            json!({ "status": "applied", "outcome": { "result": "done", "value": { "versionId": "v" } } })
        );
        let refused = Reply::Applied {
            outcome: Outcome::refused_with(
                RefusalCode::AppNotConfigured,
                "secrets missing",
                json!({ "missingSecrets": ["API_KEY"] }),
            ),
        };
        let json = serde_json::to_value(&refused).expect("json");
        assert_eq!(json["outcome"]["result"], "refused");
        assert_eq!(json["outcome"]["code"], "app_not_configured");
        assert_eq!(
            serde_json::from_value::<Reply>(json).expect("back"),
            refused
        );
        let dead = Reply::DeadLettered {
            reason: "undecodable".into(),
        };
        let text = serde_json::to_string(&dead).expect("json");
        assert_eq!(serde_json::from_str::<Reply>(&text).expect("back"), dead);
    }

    #[test]
    fn channels_name_their_command() {
        let id = Uuid::now_v7();
        assert_eq!(channel(id), format!("reply:{id}"));
        assert_eq!(command_of(&channel(id)), Some(id));
        assert_eq!(command_of("reply:nope"), None);
        assert_eq!(command_of(&id.to_string()), None);
    }
}
