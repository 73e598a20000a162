//! Commands of a workflow run (README "Definitions and runs"), keyed by the run's id so each run
//! has one writer. `Start`, `Cancel` and `OpenSubmission` come from the API; `Resume` from the
//! pipeline's timer relay when a run's timer is due (a retry's delay, a callback's timeout, a
//! settled callback).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::catalogue::{self, Topic};
use crate::envelope::Message;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Starts `run_id` on the workflow `definition_key`, its `version` or else the published
    /// one, with `context` (an object) as the run's first context.
    Start {
        run_id: Uuid,
        definition_key: String,
        version: Option<i32>,
        subject_id: Option<Uuid>,
        context: Value,
    },
    /// Cancels the run unless it has ended.
    Cancel { run_id: Uuid },
    /// A timer of the run is due: the run goes on from its stored state.
    Resume { run_id: Uuid },
    /// Opens collection submission `submission_id` on the run: the applicant's handle on it
    /// (README "Hand-off").
    OpenSubmission { run_id: Uuid, submission_id: Uuid },
}

impl Command {
    pub fn run_id(&self) -> Uuid {
        match self {
            Command::Start { run_id, .. }
            | Command::Cancel { run_id }
            | Command::Resume { run_id }
            | Command::OpenSubmission { run_id, .. } => *run_id,
        }
    }
}

/// What a runs command answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// [`Command::Start`] and [`Command::Cancel`]: the run as it now is.
    Run(readers::runs::Run),
    /// [`Command::OpenSubmission`].
    Submission(Submission),
    /// [`Command::Resume`]: the run went on (the timer relay waits on nothing).
    Resumed,
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

impl Message for Command {
    const TOPIC: Topic = catalogue::RUNS;
    const VERSION: u16 = 1;
    type Answer = Answer;

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        self.run_id().to_string().into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn commands_are_keyed_by_their_run() {
        let run_id = Uuid::now_v7();
        let start = Command::Start {
            run_id,
            definition_key: "onboarding".into(),
            version: None,
            subject_id: None,
            context: json!({"name": "Ada"}),
        };
        let key = run_id.to_string().into_bytes();
        assert_eq!(start.key(Some(Uuid::now_v7())), key);
        assert_eq!(Command::Cancel { run_id }.key(None), key);
        let wire = serde_json::to_value(Command::Resume { run_id }).expect("serialises");
        assert_eq!(wire, json!({"type": "resume", "run_id": run_id}));
    }
}
