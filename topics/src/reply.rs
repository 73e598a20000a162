//! The reply every command gets (ARCHITECTURE "Write path" rule 5): the outcome the stage
//! applied, or that the command was dead-lettered. An outcome is either what the command did
//! ([`Outcome::Done`]) or why the stage refused it ([`Outcome::Refused`]): a refusal is decided
//! by the stage from the state it holds, recorded like an effect, so a redelivery gets the same
//! answer. What a command did is typed by the command ([`Command::Reply`](crate::Command)): the
//! stage builds it and the route reads the same type, so neither guesses at the other's JSON; on
//! the way it is [`Encoded`] with its format version.
//! Stages publish the reply on the command's channel; the route that produced the command waits
//! on that channel, and recovers a missed reply from the inbox, which holds the same value.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::Error;

/// What a route waiting on a command hears (and the inbox holds, as its two columns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reply {
    /// The stage applied the command (now or before) with this outcome.
    Applied { outcome: Encoded },
    /// The command could never apply and went to the dead-letter topic.
    DeadLettered { reason: String },
}

/// What applying a command came to; `R` is the command's reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<R> {
    /// The effect happened; `value` is what the route answers (the record as it now is).
    Done { value: R },
    /// The stage refused the command: nothing changed but the inbox row.
    Refused(Refusal),
}

impl<R> Outcome<R> {
    pub fn done(value: R) -> Self {
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

impl<R: Serialize> Outcome<R> {
    /// The outcome as it travels and is stored, its value in reply format `v`.
    pub fn encode(self, v: u16) -> Result<Encoded, Error> {
        Ok(match self {
            Outcome::Done { value } => Encoded::Done {
                v,
                value: serde_json::to_value(value).map_err(Error::Encode)?,
            },
            Outcome::Refused(refusal) => Encoded::Refused(refusal),
        })
    }
}

/// An outcome as it travels on a reply and is stored in the inbox: the value as JSON with its
/// format version `v` (the topic's [`Message::REPLY_VERSION`](crate::Message::REPLY_VERSION)
/// of the build that applied it), read back as the command's reply by [`Encoded::decode`].
/// Outcomes stored before formats were versioned have none, and read as format 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Encoded {
    Done {
        #[serde(default = "first_format")]
        v: u16,
        value: Value,
    },
    Refused(Refusal),
}

fn first_format() -> u16 {
    1
}

impl Encoded {
    /// The outcome as reply `R` of reply format `v`. A value of another format is refused,
    /// saying which: each side reads only the format it was built with, so the pipeline, which
    /// writes replies, is upgraded before the API, which reads them (docs/decisions.md "Replies
    /// carry a format version").
    pub fn decode<R: DeserializeOwned>(self, v: u16) -> Result<Outcome<R>, FormatError> {
        match self {
            Encoded::Done { v: found, value } if found == v => serde_json::from_value(value)
                .map(Outcome::done)
                .map_err(|e| FormatError::Unreadable(e.to_string())),
            Encoded::Done { v: found, .. } => Err(FormatError::Version { found, reads: v }),
            Encoded::Refused(refusal) => Ok(Outcome::Refused(refusal)),
        }
    }
}

/// A published reply read straight into the command's reply `R` (no JSON tree between the
/// bytes and the value, as a waiting route reads each reply): what [`Reply`] says, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard<R> {
    Applied(Outcome<R>),
    DeadLettered(String),
}

impl<R: DeserializeOwned> Heard<R> {
    /// Reads `payload`, a published [`Reply`], as reply `R` of format `v`. One that does not
    /// read is read again untyped, to say whether its format is another.
    pub fn read(payload: &[u8], v: u16) -> Result<Self, FormatError> {
        match serde_json::from_slice::<TypedReply<R>>(payload) {
            Ok(TypedReply::Applied {
                outcome: TypedOutcome::Done { v: found, value },
            }) if found == v => Ok(Heard::Applied(Outcome::done(value))),
            Ok(TypedReply::Applied {
                outcome: TypedOutcome::Done { v: found, .. },
            }) => Err(FormatError::Version { found, reads: v }),
            Ok(TypedReply::Applied {
                outcome: TypedOutcome::Refused(refusal),
            }) => Ok(Heard::Applied(Outcome::Refused(refusal))),
            Ok(TypedReply::DeadLettered { reason }) => Ok(Heard::DeadLettered(reason)),
            Err(error) => match serde_json::from_slice::<Reply>(payload) {
                Ok(Reply::Applied {
                    outcome: Encoded::Done { v: found, .. },
                }) if found != v => Err(FormatError::Version { found, reads: v }),
                _ => Err(FormatError::Unreadable(error.to_string())),
            },
        }
    }
}

/// [`Reply`] with its value typed, for [`Heard::read`].
#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum TypedReply<R> {
    Applied { outcome: TypedOutcome<R> },
    DeadLettered { reason: String },
}

/// [`Encoded`] with its value typed.
#[derive(Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum TypedOutcome<R> {
    Done {
        #[serde(default = "first_format")]
        v: u16,
        value: R,
    },
    Refused(Refusal),
}

/// Why a stored or published outcome does not read as the command's reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error(
        "the reply is in format {found}; this build reads format {reads} of its topic's replies"
    )]
    Version { found: u16, reads: u16 },
    #[error("the reply does not read as the command's reply: {0}")]
    Unreadable(String),
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
    use crate::circuits::{Circuit, CircuitState};

    fn circuit() -> Circuit {
        Circuit {
            state: CircuitState::Open,
            failures: 5,
        }
    }

    #[test]
    fn replies_say_what_happened() {
        let applied = Reply::Applied {
            outcome: Outcome::done(circuit()).encode(3).expect("encodes"),
        };
        let json = serde_json::to_value(&applied).expect("json");
        assert_eq!(
            json,
            json!({ "status": "applied", "outcome": { "result": "done", "v": 3, "value": { "state": "open", "failures": 5 } } })
        );
        let Reply::Applied { outcome } = serde_json::from_value::<Reply>(json).expect("back")
        else {
            panic!("applied reads back as applied");
        };
        assert_eq!(outcome.decode::<Circuit>(3), Ok(Outcome::done(circuit())));
        let refused = Outcome::<Circuit>::refused_with(
            RefusalCode::AppNotConfigured,
            "secrets missing",
            json!({ "missingSecrets": ["API_KEY"] }),
        );
        let json = serde_json::to_value(refused.clone().encode(3).expect("encodes")).expect("json");
        assert_eq!(json["result"], "refused");
        assert_eq!(json["code"], "app_not_configured");
        let back: Encoded = serde_json::from_value(json).expect("back");
        // A refusal reads whatever the format: its shape is every topic's.
        assert_eq!(back.decode::<Circuit>(7), Ok(refused));
        let dead = Reply::DeadLettered {
            reason: "undecodable".into(),
        };
        let text = serde_json::to_string(&dead).expect("json");
        assert_eq!(serde_json::from_str::<Reply>(&text).expect("back"), dead);
    }

    /// An upgrade: an outcome the inbox stored before formats had versions reads as format 1;
    /// an outcome of another format is refused with what it is and what this build reads, never
    /// misread as this build's reply.
    #[test]
    fn an_outcome_of_another_format_is_refused_saying_so() {
        let before_versions =
            json!({ "result": "done", "value": { "state": "closed", "failures": 0 } });
        let stored: Encoded = serde_json::from_value(before_versions).expect("reads");
        assert_eq!(
            stored.clone().decode::<Circuit>(1),
            Ok(Outcome::done(Circuit {
                state: CircuitState::Closed,
                failures: 0
            }))
        );
        let refused = stored
            .decode::<Circuit>(2)
            .expect_err("format 1 is not format 2");
        assert_eq!(refused, FormatError::Version { found: 1, reads: 2 });
        assert_eq!(
            refused.to_string(),
            "the reply is in format 1; this build reads format 2 of its topic's replies"
        );
        // The installs topic's format 1 wrapped its value in the answer's variant.
        let wrapped: Encoded = serde_json::from_value(
            json!({ "result": "done", "v": 2, "value": { "install": { "state": "open" } } }),
        )
        .expect("reads");
        assert!(matches!(
            wrapped.decode::<Circuit>(2),
            Err(FormatError::Unreadable(_))
        ));
    }

    #[test]
    fn a_published_reply_is_heard_typed_or_refused_by_its_format() {
        let applied = Reply::Applied {
            outcome: Outcome::done(circuit()).encode(2).expect("encodes"),
        };
        let bytes = serde_json::to_vec(&applied).expect("json");
        assert_eq!(
            Heard::<Circuit>::read(&bytes, 2),
            Ok(Heard::Applied(Outcome::done(circuit())))
        );
        assert_eq!(
            Heard::<Circuit>::read(&bytes, 3),
            Err(FormatError::Version { found: 2, reads: 3 })
        );
        // Another shape of value in another format: the format is what is named.
        assert_eq!(
            Heard::<u32>::read(&bytes, 3),
            Err(FormatError::Version { found: 2, reads: 3 })
        );
        assert!(matches!(
            Heard::<u32>::read(&bytes, 2),
            Err(FormatError::Unreadable(_))
        ));
        let dead = serde_json::to_vec(&Reply::DeadLettered {
            reason: "undecodable".into(),
        })
        .expect("json");
        assert_eq!(
            Heard::<Circuit>::read(&dead, 2),
            Ok(Heard::DeadLettered("undecodable".into()))
        );
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
