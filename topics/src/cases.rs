//! Commands of a case (README "Cases"), on [`catalogue::CASES`], keyed by case: one writer
//! decides each case once and records its SLA breach once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::command::topic_commands;
use crate::{Command, catalogue};

/// A case's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Medium,
    High,
    Critical,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Medium => "medium",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

/// How a case is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Approved,
    Rejected,
    NoAction,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Rejected => "rejected",
            Outcome::NoAction => "no_action",
        }
    }
}

/// What opens a case: its type (a label of the tenant's choosing, `kyc_review`), a title, the
/// subject, the priority and the SLA deadline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Opening {
    pub case_type: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_id: Option<Uuid>,
    pub priority: Priority,
    pub sla_due_at: DateTime<Utc>,
}

topic_commands! {
    /// The commands of a case.
    pub enum CasesCommand on catalogue::CASES, version 1, replies 1 {
        Open,
        Decide,
        BreachSla,
    }
}

/// A case as it stands after a command.
pub type Case = readers::cases::Case;

/// The commands of one case, keyed by it; each answers the case as it stands after it.
macro_rules! case_command {
    ($command:ident) => {
        impl Command for $command {
            type Body = CasesCommand;
            type Reply = Case;

            fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
                catalogue::id_key(self.case_id)
            }
        }
    };
}

/// Opens case `case_id` (`POST /cases`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    pub case_id: Uuid,
    pub opening: Opening,
}
case_command!(Open);

/// Decides an open case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decide {
    pub case_id: Uuid,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}
case_command!(Decide);

/// The case's SLA deadline passed (its timer fired): recorded once, if still open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreachSla {
    pub case_id: Uuid,
}
case_command!(BreachSla);
