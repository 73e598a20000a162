//! A run as a line of `COPY workflow_runs` and its steps as lines of
//! `COPY workflow_run_steps`.

use super::fields::{copy_line, integer, optional, text, timestamp, uuid};
use crate::run::{CREATED_BY, DEFINITION_VERSION, Run, StepFailure};

/// The statements runs and their steps are sent with, runs first (steps reference them); the
/// columns are in the order [`encode`] and [`encode_steps`] write them. A step's output is
/// left out: the steps' outputs would copy the invocations' over again.
pub(super) const RUNS: &str = "COPY workflow_runs (id, tenant_id, definition_key, \
     definition_version, subject_id, status, context, position, error, created_by, created_at, \
     updated_at, finished_at) FROM STDIN";
pub(super) const STEPS: &str = "COPY workflow_run_steps (run_id, step_id, position, type, \
     status, error, started_at, finished_at) FROM STDIN";

/// Appends `run` as one line to `runs`.
pub(super) fn encode(run: &Run<'_>, runs: &mut Vec<u8>) {
    let state = &run.state;
    copy_line!(runs;
        uuid(run.id),
        uuid(run.tenant_id),
        text(run.definition_key),
        integer(i64::from(DEFINITION_VERSION)),
        optional(run.subject_id, uuid),
        text(state.status.as_str()),
        text(run.context),
        integer(i64::from(state.position)),
        optional(state.failure, error),
        text(CREATED_BY),
        timestamp(state.created_at),
        timestamp(state.updated_at),
        optional(state.finished_at, timestamp),
    );
}

/// Appends each step of `run` as one line to `steps`.
pub(super) fn encode_steps(run: &Run<'_>, steps: &mut Vec<u8>) {
    for (position, step) in run.steps.iter().enumerate() {
        copy_line!(steps;
            uuid(run.id),
            text(step.id),
            integer(position as i64),
            text("call_app"),
            text(step.status.as_str()),
            optional(step.failure, error),
            timestamp(step.started_at),
            optional(step.finished_at, timestamp),
        );
    }
}

/// The engine's words for a call that failed for good.
fn error(out: &mut Vec<u8>, failure: StepFailure) {
    text(out, "AppCallFailed: ");
    text(out, failure.app);
    out.push(b' ');
    text(out, failure.action);
    text(out, " (");
    text(out, failure.code);
    out.push(b')');
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::super::fields::decode;
    use super::*;
    use crate::run::{RunState, RunStatus, RunStep};

    const FAILURE: StepFailure = StepFailure {
        app: "sanctions-screening",
        action: "screen-person",
        code: "timeout",
    };

    fn lines(out: &[u8]) -> Vec<Vec<Option<String>>> {
        out.split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(decode)
            .collect()
    }

    #[test]
    fn a_failed_run_and_its_steps_read_back_as_written() {
        let steps = [
            RunStep {
                id: "kyc-check",
                status: RunStatus::Completed,
                failure: None,
                started_at: 1_700_000_000_000_001,
                finished_at: Some(1_700_000_000_500_000),
            },
            RunStep {
                id: "sanctions-screening",
                status: RunStatus::Failed,
                failure: Some(FAILURE),
                started_at: 1_700_000_001_000_000,
                finished_at: Some(1_700_000_031_000_000),
            },
        ];
        let run = Run {
            id: Uuid::from_u128(7),
            tenant_id: Uuid::from_u128(2),
            definition_key: "onboarding",
            subject_id: None,
            context: "{\"subjectRef\":\"cus_2a\",\"channel\":\"web\"}",
            state: RunState {
                status: RunStatus::Failed,
                position: 1,
                failure: Some(FAILURE),
                created_at: 1_700_000_000_000_001,
                updated_at: 1_700_000_031_000_000,
                finished_at: Some(1_700_000_031_000_000),
            },
            steps: &steps,
        };
        let (mut runs, mut step_lines) = (Vec::new(), Vec::new());
        encode(&run, &mut runs);
        encode_steps(&run, &mut step_lines);
        let runs = lines(&runs);
        assert_eq!(runs.len(), 1);
        let error = "AppCallFailed: sanctions-screening screen-person (timeout)";
        let field = |k: usize| runs[0][k].as_deref();
        assert_eq!(runs[0].len(), 13);
        assert_eq!(field(0), Some("00000000-0000-0000-0000-000000000007"));
        assert_eq!(
            (field(2), field(3), field(4)),
            (Some("onboarding"), Some("1"), None)
        );
        assert_eq!((field(5), field(6)), (Some("failed"), Some(run.context)));
        assert_eq!(
            (field(7), field(8), field(9)),
            (Some("1"), Some(error), Some(CREATED_BY))
        );
        assert_eq!(field(10), Some("2023-11-14 22:13:20.000001+00"));
        assert_eq!(field(12), Some("2023-11-14 22:13:51.000000+00"));
        let steps = lines(&step_lines);
        assert_eq!(steps.len(), 2);
        assert!(steps.iter().all(|step| step.len() == 8));
        assert!(steps.iter().all(|step| step[0] == runs[0][0]));
        assert_eq!(
            steps[0][1..6],
            [
                Some("kyc-check".into()),
                Some("0".into()),
                Some("call_app".into()),
                Some("completed".into()),
                None
            ]
        );
        assert_eq!(steps[1][2].as_deref(), Some("1"));
        assert_eq!(
            (steps[1][4].as_deref(), steps[1][5].as_deref()),
            (Some("failed"), Some(error))
        );
    }

    #[test]
    fn an_unfinished_run_has_no_end() {
        let steps = [RunStep {
            id: "kyc-check",
            status: RunStatus::WaitingCallback,
            failure: None,
            started_at: 1_700_000_000_000_001,
            finished_at: None,
        }];
        let run = Run {
            id: Uuid::from_u128(8),
            tenant_id: Uuid::from_u128(2),
            definition_key: "payout",
            subject_id: Some(Uuid::from_u128(9)),
            context: "{}",
            state: RunState {
                status: RunStatus::WaitingCallback,
                position: 0,
                failure: None,
                created_at: 1_700_000_000_000_001,
                updated_at: 1_700_000_000_000_001,
                finished_at: None,
            },
            steps: &steps,
        };
        let (mut runs, mut step_lines) = (Vec::new(), Vec::new());
        encode(&run, &mut runs);
        encode_steps(&run, &mut step_lines);
        let runs = lines(&runs);
        assert_eq!(
            (runs[0][5].as_deref(), runs[0][8].as_deref()),
            (Some("waiting_callback"), None)
        );
        assert_eq!(runs[0][12], None);
        assert_eq!(lines(&step_lines)[0][7], None);
    }
}
