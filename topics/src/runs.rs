//! Commands of a workflow run (README "Definitions and runs"), keyed by the run's id so each run
//! has one writer. `Start`, `Cancel` and `OpenSubmission` come from the API; `Resume` from the
//! pipeline's timer relay when a run's timer is due (a retry's delay, a callback's timeout, a
//! settled callback).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::command::topic_commands;
use crate::{Command, catalogue};

topic_commands! {
    /// The commands of a run.
    pub enum RunsCommand on catalogue::RUNS, version 1, replies 2 {
        Start,
        Cancel,
        Resume,
        OpenSubmission,
    }
}

/// The commands of one run, keyed by it.
macro_rules! run_command {
    ($command:ident, $reply:ty) => {
        impl Command for $command {
            type Body = RunsCommand;
            type Reply = $reply;

            fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
                self.run_id.to_string().into_bytes()
            }
        }
    };
}

/// A run as it now is.
pub type Run = readers::runs::Run;

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
run_command!(Start, Run);

/// Cancels the run unless it has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cancel {
    pub run_id: Uuid,
}
run_command!(Cancel, Run);

/// A timer of the run is due: the run goes on from its stored state (the timer relay waits on
/// nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    pub run_id: Uuid,
}
run_command!(Resume, ());

/// Opens collection submission `submission_id` on the run: the applicant's handle on it
/// (README "Hand-off").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenSubmission {
    pub run_id: Uuid,
    pub submission_id: Uuid,
}
run_command!(OpenSubmission, Submission);

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
