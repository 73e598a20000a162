//! Commands of a workflow run (docs/definitions-and-runs.md), keyed by the run's id so each run
//! has one writer. `Start`, `Cancel` and `OpenSubmission` come from the API; `Resume` from the
//! pipeline's timer relay when a run's timer is due (a retry's delay, a callback's timeout, a
//! settled callback).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;

topic_commands! {
    /// The commands of a run, keyed by it.
    pub enum RunsCommand on catalogue::RUNS, version 1, replies 2,
        keyed |command, _tenant| command.run_id.to_string().into_bytes();
    {
        Start => Run,
        Cancel => Run,
        Resume => (),
        OpenSubmission => Submission,
    }
}

/// Starts `run_id` on the workflow `definition_key`, its `version` or else the published one,
/// with `context` (an object) as the run's first context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub run_id: Uuid,
    pub definition_key: String,
    pub version: Option<i32>,
    pub subject_id: Option<Uuid>,
    pub context: Value,
}

/// Cancels the run unless it has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cancel {
    pub run_id: Uuid,
}

/// A timer of the run is due: the run goes on from its stored state (the timer relay waits on
/// nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    pub run_id: Uuid,
}

/// Opens collection submission `submission_id` on the run: the applicant's handle on it
/// (docs/hand-off.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenSubmission {
    pub run_id: Uuid,
    pub submission_id: Uuid,
}

labels! {
    /// Where a run, or one of its steps, stands.
    pub enum RunStatus {
        Running = "running",
        /// An app call of the step waits on its vendor's callback.
        WaitingCallback = "waiting_callback",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl RunStatus {
    /// Whether the run (or step) has ended.
    pub fn has_ended(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A run as it stands, with each step it reached (`GET /workflow-runs/:id`, and what starting
/// and cancelling answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: Uuid,
    pub definition_key: String,
    pub definition_version: i32,
    pub subject_id: Option<Uuid>,
    pub status: RunStatus,
    pub context: Value,
    /// Why the run failed: the failure's name and the app and action (never a vendor's words).
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub steps: Vec<Step>,
}

/// A step the run reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    /// `call_app` or `rule_set`.
    #[serde(rename = "type")]
    pub kind: String,
    pub status: RunStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Attempts of its app calls that reached an install (its invocation records).
    pub attempts: i32,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A collection submission opened on a run: the handle an applicant's token names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Submission {
    pub id: Uuid,
    pub workflow_run_id: Uuid,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Message;

    #[test]
    fn commands_are_keyed_by_their_run() {
        let run_id = Uuid::now_v7();
        let start = RunsCommand::from(Start {
            run_id,
            definition_key: "onboarding".into(),
            version: None,
            subject_id: None,
            context: json!({"name": "Ada"}),
        });
        let key = run_id.to_string().into_bytes();
        assert_eq!(start.key(Some(Uuid::now_v7())), key);
        assert_eq!(RunsCommand::from(Cancel { run_id }).key(None), key);
        let wire = serde_json::to_value(RunsCommand::from(Resume { run_id })).expect("serialises");
        assert_eq!(wire, json!({"type": "resume", "run_id": run_id}));
    }
}
