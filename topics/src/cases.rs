//! Commands of a case (README "Cases"), on [`catalogue::CASES`], keyed by case: one writer
//! decides each case once and records its SLA breach once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Opens case `case_id` (`POST /cases`).
    Open { case_id: Uuid, opening: Opening },
    /// Decides an open case.
    Decide {
        case_id: Uuid,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    /// The case's SLA deadline passed (its timer fired): recorded once, if still open.
    BreachSla { case_id: Uuid },
}

impl Command {
    pub fn case_id(&self) -> Uuid {
        match self {
            Command::Open { case_id, .. }
            | Command::Decide { case_id, .. }
            | Command::BreachSla { case_id } => *case_id,
        }
    }
}

impl Message for Command {
    const TOPIC: Topic = catalogue::CASES;
    const VERSION: u16 = 1;
    /// The case as it stands after the command.
    type Answer = readers::cases::Case;

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::id_key(self.case_id())
    }
}
