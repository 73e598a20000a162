//! Commands of a case (docs/cases-activity-audit.md "Cases"), on [`catalogue::CASES`], keyed by
//! case: one writer decides each case once and records its SLA breach once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;

labels! {
    /// A case's priority.
    pub enum Priority {
        Low = "low",
        Medium = "medium",
        High = "high",
        Critical = "critical",
    }
}

labels! {
    /// How a case is decided.
    pub enum Outcome {
        Approved = "approved",
        Rejected = "rejected",
        NoAction = "no_action",
    }
}

labels! {
    /// Where a case stands.
    pub enum CaseStatus {
        Open = "open",
        Decided = "decided",
    }
}

/// A case as it stands (`GET /cases/:id`, and what every case command answers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    pub id: Uuid,
    #[serde(rename = "type")]
    pub case_type: String,
    pub title: String,
    pub subject_id: Option<Uuid>,
    pub priority: Priority,
    pub status: CaseStatus,
    pub sla_due_at: DateTime<Utc>,
    /// When the deadline passed with the case still open.
    pub sla_breached_at: Option<DateTime<Utc>>,
    /// `null` while open.
    pub outcome: Option<Outcome>,
    pub decision_comment: Option<String>,
    pub opened_by: String,
    pub opened_by_name: String,
    pub opened_at: DateTime<Utc>,
    pub decided_by: Option<String>,
    pub decided_by_name: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub workflow_run_id: Option<Uuid>,
    pub step_id: Option<String>,
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
    /// The commands of a case, keyed by it; each answers the case as it stands after it.
    pub enum CasesCommand on catalogue::CASES, version 1, replies 1,
        keyed |command, _tenant| catalogue::id_key(command.case_id);
    {
        Open => Case,
        Decide => Case,
        BreachSla => Case,
    }
}

/// Opens case `case_id` (`POST /cases`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Open {
    pub case_id: Uuid,
    pub opening: Opening,
}

/// Decides an open case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decide {
    pub case_id: Uuid,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The case's SLA deadline passed (its timer fired): recorded once, if still open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreachSla {
    pub case_id: Uuid,
}
