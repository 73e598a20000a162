//! A seeded workflow run as `workflow_runs` and `workflow_run_steps` hold it: the state its
//! invocations leave it in at the end of the timeline (the horizon). A step is `completed` once
//! answered (an asynchronous call once its callback came) and `failed` when its last attempt
//! failed for good; the run follows its last step. What would happen after the horizon has
//! not happened yet: such a step is still `running` (an attempt in flight, a retry due) or
//! `waiting_callback`, and so is its run, unfinished. A run the generator cut short before the
//! horizon (the hour's or the run's rows ran out) was `cancelled` where it stopped.
//!
//! So a run's invocations all fall within its lifetime, which readers rely on: it starts with
//! its first attempt and, when it has finished, finished no earlier than its last.

pub(super) use topics::runs::RunStatus;
use uuid::Uuid;

/// Who started the seeded runs: a service, not a person.
pub(super) const CREATED_BY: &str = "workflow-engine";
/// Every seeded run pins the first version of its workflow.
pub(super) const DEFINITION_VERSION: i32 = 1;

/// Why a step failed for good: its `error`, and its run's, say
/// `AppCallFailed: <app> <action> (<code>)` as the engine does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StepFailure {
    pub(super) app: &'static str,
    pub(super) action: &'static str,
    /// The last attempt's status: `error` or `timeout`.
    pub(super) code: &'static str,
}

/// How a step's attempts ended, and when (microseconds since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepEnd {
    Answered {
        at: i64,
    },
    /// Accepted by an asynchronous app, whose callback arrives `at`.
    CalledBack {
        at: i64,
    },
    /// Not retryable, or out of attempts.
    Failed {
        at: i64,
        failure: StepFailure,
    },
    /// Not attempted again, though the next attempt was due `at`.
    Stopped {
        at: i64,
    },
}

impl StepEnd {
    /// When the run may go on to its next step, if it may.
    pub(super) fn settled_at(self) -> Option<i64> {
        match self {
            StepEnd::Answered { at } | StepEnd::CalledBack { at } => Some(at),
            StepEnd::Failed { .. } | StepEnd::Stopped { .. } => None,
        }
    }
}

/// A step the run reached: one row of `workflow_run_steps` (its position is its index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RunStep {
    /// The app it calls: a workflow calls each of its apps once.
    pub(super) id: &'static str,
    pub(super) status: RunStatus,
    pub(super) failure: Option<StepFailure>,
    /// Its first attempt.
    pub(super) started_at: i64,
    pub(super) finished_at: Option<i64>,
}

impl RunStep {
    /// Step `id`, first attempted `started_at` and ended as `end`, as it stands at `horizon`.
    pub(super) fn seen_at(id: &'static str, started_at: i64, end: StepEnd, horizon: i64) -> Self {
        let (status, finished_at, failure) = match end {
            StepEnd::Answered { at } | StepEnd::CalledBack { at } if at <= horizon => {
                (RunStatus::Completed, Some(at), None)
            }
            StepEnd::CalledBack { .. } => (RunStatus::WaitingCallback, None, None),
            StepEnd::Failed { at, failure } if at <= horizon => {
                (RunStatus::Failed, Some(at), Some(failure))
            }
            // Before the horizon, only the run's rows running out stop a step.
            StepEnd::Stopped { at } if at <= horizon => (RunStatus::Cancelled, Some(at), None),
            StepEnd::Answered { .. } | StepEnd::Failed { .. } | StepEnd::Stopped { .. } => {
                (RunStatus::Running, None, None)
            }
        };
        Self {
            id,
            status,
            failure,
            started_at,
            finished_at,
        }
    }
}

/// Where a run stands at the horizon: the columns of its row that its steps decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RunState {
    pub(super) status: RunStatus,
    /// Steps done.
    pub(super) position: i32,
    pub(super) failure: Option<StepFailure>,
    /// Microseconds since the Unix epoch: its first attempt.
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) finished_at: Option<i64>,
}

impl RunState {
    /// The state of a run of `workflow_steps` steps that reached `steps` (none: no run), made
    /// its last attempt `last_invoked_at` and, when it stopped between two steps, was due to
    /// start the next `next_at`.
    pub(super) fn at_horizon(
        steps: &[RunStep],
        workflow_steps: usize,
        last_invoked_at: i64,
        next_at: i64,
        horizon: i64,
    ) -> Option<Self> {
        let (first, last) = (steps.first()?, steps.last()?);
        let (status, finished_at, failure) = match last.status {
            RunStatus::Completed if steps.len() == workflow_steps => {
                (RunStatus::Completed, last.finished_at, None)
            }
            RunStatus::Completed if next_at > horizon => (RunStatus::Running, None, None),
            RunStatus::Completed => (RunStatus::Cancelled, Some(next_at), None),
            status => (status, last.finished_at, last.failure),
        };
        let done = steps
            .iter()
            .filter(|step| step.status == RunStatus::Completed)
            .count();
        // Unfinished, it last changed with its last attempt or, between steps, its last step.
        let last_change = last
            .finished_at
            .map_or(last_invoked_at, |at| at.max(last_invoked_at));
        Some(Self {
            status,
            position: i32::try_from(done).unwrap_or(i32::MAX),
            failure,
            created_at: first.started_at,
            updated_at: finished_at.unwrap_or(last_change),
            finished_at,
        })
    }
}

/// One row of `workflow_runs` as generated, with the steps it reached; the text borrows the
/// generator's buffers.
#[derive(Debug)]
pub(super) struct Run<'a> {
    pub(super) id: Uuid,
    pub(super) tenant_id: Uuid,
    pub(super) definition_key: &'static str,
    pub(super) subject_id: Option<Uuid>,
    /// A JSON object.
    pub(super) context: &'a str,
    pub(super) state: RunState,
    pub(super) steps: &'a [RunStep],
}

#[cfg(test)]
mod tests {
    use super::*;

    const HORIZON: i64 = 1_000_000;
    const FAILURE: StepFailure = StepFailure {
        app: "kyc-check",
        action: "verify-identity",
        code: "timeout",
    };

    fn step(started_at: i64, end: StepEnd) -> RunStep {
        RunStep::seen_at("kyc-check", started_at, end, HORIZON)
    }

    fn state(
        steps: &[RunStep],
        workflow_steps: usize,
        last_invoked_at: i64,
        next_at: i64,
    ) -> RunState {
        RunState::at_horizon(steps, workflow_steps, last_invoked_at, next_at, HORIZON)
            .expect("a step reached")
    }

    #[test]
    fn a_step_is_what_its_attempts_made_it_by_the_horizon() {
        let seen = |end| {
            let step = step(10, end);
            (step.status, step.finished_at)
        };
        let before = HORIZON - 1;
        let after = HORIZON + 1;
        use RunStatus::*;
        assert_eq!(
            seen(StepEnd::Answered { at: before }),
            (Completed, Some(before))
        );
        assert_eq!(seen(StepEnd::Answered { at: after }), (Running, None));
        assert_eq!(
            seen(StepEnd::CalledBack { at: HORIZON }),
            (Completed, Some(HORIZON))
        );
        assert_eq!(
            seen(StepEnd::CalledBack { at: after }),
            (WaitingCallback, None)
        );
        let failed = |at| StepEnd::Failed {
            at,
            failure: FAILURE,
        };
        assert_eq!(seen(failed(before)), (Failed, Some(before)));
        assert_eq!(step(10, failed(before)).failure, Some(FAILURE));
        assert_eq!(seen(failed(after)), (Running, None));
        assert_eq!(step(10, failed(after)).failure, None);
        assert_eq!(
            seen(StepEnd::Stopped { at: before }),
            (Cancelled, Some(before))
        );
        assert_eq!(seen(StepEnd::Stopped { at: after }), (Running, None));
    }

    #[test]
    fn a_run_of_answered_steps_completes_with_its_last() {
        let steps = [
            step(10, StepEnd::Answered { at: 20 }),
            step(30, StepEnd::CalledBack { at: 90 }),
        ];
        let run = state(&steps, 2, 40, 95);
        assert_eq!(run.status, RunStatus::Completed);
        assert_eq!(
            (run.created_at, run.updated_at, run.finished_at),
            (10, 90, Some(90))
        );
        assert_eq!((run.position, run.failure), (2, None));
    }

    #[test]
    fn a_run_fails_with_its_step_and_keeps_the_steps_done() {
        let failed = StepEnd::Failed {
            at: 70,
            failure: FAILURE,
        };
        let steps = [step(10, StepEnd::Answered { at: 20 }), step(30, failed)];
        let run = state(&steps, 3, 60, 30);
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!((run.position, run.failure), (1, Some(FAILURE)));
        assert_eq!((run.updated_at, run.finished_at), (70, Some(70)));
    }

    #[test]
    fn a_run_stopped_before_the_horizon_was_cancelled_where_it_stopped() {
        let steps = [step(10, StepEnd::Answered { at: 20 })];
        let between = state(&steps, 2, 10, 25);
        assert_eq!(between.status, RunStatus::Cancelled);
        assert_eq!((between.position, between.finished_at), (1, Some(25)));
        let steps = [step(10, StepEnd::Stopped { at: 50 })];
        let retrying = state(&steps, 2, 40, 50);
        assert_eq!(retrying.status, RunStatus::Cancelled);
        assert_eq!((retrying.position, retrying.finished_at), (0, Some(50)));
    }

    #[test]
    fn a_run_unfinished_at_the_horizon_has_no_end_and_changed_last_by_then() {
        let answered = step(10, StepEnd::Answered { at: 20 });
        let next_due_after = state(std::slice::from_ref(&answered), 2, 10, HORIZON + 5);
        assert_eq!(next_due_after.status, RunStatus::Running);
        assert_eq!(
            (next_due_after.updated_at, next_due_after.finished_at),
            (20, None)
        );
        let waiting = [answered, step(30, StepEnd::CalledBack { at: HORIZON + 9 })];
        let run = state(&waiting, 3, 30, HORIZON + 9);
        assert_eq!(run.status, RunStatus::WaitingCallback);
        assert_eq!(
            (run.position, run.updated_at, run.finished_at),
            (1, 30, None)
        );
    }

    #[test]
    fn no_step_reached_is_no_run() {
        assert_eq!(RunState::at_horizon(&[], 2, 0, 0, HORIZON), None);
    }
}
