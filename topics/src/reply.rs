//! The reply every command gets (ARCHITECTURE "Write path" rule 5): the outcome the stage
//! applied, or that the command was dead-lettered. An outcome is either what the command did
//! ([`Outcome::Done`]) or why the stage refused it ([`Outcome::Refused`]): a refusal is decided
//! by the stage from the state it holds, recorded like an effect, so a redelivery gets the same
//! answer. What a command did is typed by its topic ([`Message::Answer`](crate::Message)): the
//! stage builds it and the route reads the same type, so neither guesses at the other's JSON.
//! Stages publish the reply on the command's channel; the route that produced the command waits
//! on that channel, and recovers a missed reply from the inbox, which holds the same value.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reply<A> {
    /// The stage applied the command (now or before) with this outcome.
    Applied { outcome: Outcome<A> },
    /// The command could never apply and went to the dead-letter topic.
    DeadLettered { reason: String },
}

/// What applying a command came to; `A` is its topic's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome<A> {
    /// The effect happened; `value` is what the route answers (the record as it now is).
    Done { value: A },
    /// The stage refused the command: nothing changed but the inbox row.
    Refused(Refusal),
}

impl<A> Outcome<A> {
    pub fn done(value: A) -> Self {
        Outcome::Done { value }
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

/// Why a stage refused a command, in the terms of SPEC §7. `details` is the error envelope's
/// open `details` object (the missing secrets, the issues of a 400), JSON by SPEC's design.
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
    use crate::circuits::Circuit;

    #[test]
    fn replies_say_what_happened() {
        let applied = Reply::Applied {
            outcome: Outcome::done(Circuit {
                state: "open".into(),
                failures: 5,
            }),
        };
        let json = serde_json::to_value(&applied).expect("json");
        assert_eq!(
            json,
            json!({ "status": "applied", "outcome": { "result": "done", "value": { "state": "open", "failures": 5 } } })
        );
        assert_eq!(
            serde_json::from_value::<Reply<Circuit>>(json).expect("back"),
            applied
        );
        let refused: Reply<Circuit> = Reply::Applied {
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
            serde_json::from_value::<Reply<Circuit>>(json).expect("back"),
            refused
        );
        let dead: Reply<Circuit> = Reply::DeadLettered {
            reason: "undecodable".into(),
        };
        let text = serde_json::to_string(&dead).expect("json");
        assert_eq!(
            serde_json::from_str::<Reply<Circuit>>(&text).expect("back"),
            dead
        );
    }

    #[test]
    fn an_answer_reads_back_as_its_variant() {
        use crate::installs::{Answer as InstallsAnswer, SecretState};
        use crate::runs::Answer as RunsAnswer;

        let secret = InstallsAnswer::Secret(SecretState {
            app_name: "acme".into(),
            name: "API_KEY".into(),
            stored: false,
            missing_secrets: Some(vec!["API_KEY".into()]),
        });
        let text = serde_json::to_string(&Outcome::done(secret.clone())).expect("json");
        assert_eq!(
            serde_json::from_str::<Outcome<InstallsAnswer>>(&text).expect("back"),
            Outcome::done(secret)
        );
        let resumed = serde_json::to_value(Outcome::done(RunsAnswer::Resumed)).expect("json");
        assert_eq!(resumed, json!({ "result": "done", "value": "resumed" }));
        // Another topic's answer does not pass for this one's.
        assert!(serde_json::from_str::<Outcome<RunsAnswer>>(&text).is_err());
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
