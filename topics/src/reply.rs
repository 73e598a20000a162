//! The reply every command gets (ARCHITECTURE "Write path" rule 5): the outcome the stage
//! applied (a refusal decided by the stage is an outcome too), or that the command was
//! dead-lettered. Stages publish it on the command's channel; the route that produced the
//! command waits on that channel, and recovers a missed reply from the inbox, which holds the
//! same value.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Reply {
    /// The stage applied the command (now or before) with this outcome.
    Applied { outcome: Value },
    /// The command could never apply and went to the dead-letter topic.
    DeadLettered { reason: String },
}

/// The Redis channel on which the reply to `command_id` is published.
pub fn channel(command_id: Uuid) -> String {
    format!("reply:{command_id}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn replies_say_what_happened() {
        let applied = Reply::Applied {
            outcome: json!({ "versionId": "v" }),
        };
        assert_eq!(
            serde_json::to_value(&applied).expect("json"),
            json!({ "status": "applied", "outcome": { "versionId": "v" } })
        );
        let dead = Reply::DeadLettered {
            reason: "undecodable".into(),
        };
        let text = serde_json::to_string(&dead).expect("json");
        assert_eq!(serde_json::from_str::<Reply>(&text).expect("back"), dead);
        assert_eq!(channel(Uuid::nil()), format!("reply:{}", Uuid::nil()));
    }
}
