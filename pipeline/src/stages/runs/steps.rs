//! What each kind of step does:
//!
//! - `call_app`: one app call ([`call`](super::call)) with the input built from the context
//!   (SPEC §4.12); its output is the step's.
//! - `rule_set`: its rules evaluated in order ([`rule_set`](super::rule_set)), the evaluation
//!   recorded as the run moves on.
//! - `open_case`: a case for the run's subject (docs/cases-activity-audit.md "Cases"), when its
//!   `when` compares true of the context (always without one); [`advance`](super::advance)
//!   inserts it in the transaction that moves the run on, once per run and step.

use serde_json::{Map, Value, json};
use topics::cases::Opening;
use topics::definitions::{CallApp, OpenCaseStep, Step, StepRun};

use super::advance::RunRow;
use super::call::{Call, CallState, Calls};
use super::evaluation::Evaluation;
use super::input_mapping;
use super::rule_set;
use crate::Error;
use topics::definitions::rules::{self, RuleOutcome};

/// How far a step got.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepOutcome {
    Done(Value),
    /// A `rule_set` step's output, with the evaluation to record.
    Evaluated(Box<Evaluation>),
    /// A retry's delay runs.
    Waiting,
    /// An asynchronous action waits for its callback.
    Pending {
        external_id: String,
    },
    Failed(String),
    /// An `open_case` step whose case opens as the run moves on.
    OpensCase(Opening),
}

pub(crate) async fn run(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    request_id: &str,
) -> Result<StepOutcome, Error> {
    match &step.run {
        StepRun::CallApp(call_app) => call_step(calls, run, step, call_app, request_id).await,
        StepRun::RuleSet(set) => rule_set::run(calls, run, step, set, request_id).await,
        StepRun::OpenCase(case) => Ok(open_case_step(run, case)),
    }
}

fn open_case_step(run: &RunRow, case: &OpenCaseStep) -> StepOutcome {
    let holds = case.when.as_ref().is_none_or(|when| {
        rules::decide(&run.context, &when.path, &when.condition()) == RuleOutcome::Fail
    });
    if !holds {
        return StepOutcome::Done(json!({"opened": false}));
    }
    let hours = i64::from(case.sla_hours);
    StepOutcome::OpensCase(Opening {
        case_type: case.case_type.clone(),
        title: case
            .title
            .clone()
            .unwrap_or_else(|| format!("{} ({})", case.case_type, run.definition_key)),
        subject_id: run.subject_id,
        priority: case.priority,
        sla_due_at: chrono::Utc::now() + chrono::Duration::hours(hours),
    })
}

async fn call_step(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    call_app: &CallApp,
    request_id: &str,
) -> Result<StepOutcome, Error> {
    let call = Call {
        run_id: run.id,
        tenant: run.tenant_id,
        subject_id: run.subject_id,
        step_id: &step.id,
        key: step.id.clone(),
        app: &call_app.app,
        action: &call_app.action,
        input: input(
            call_app.input.as_ref(),
            call_app.input_mapping.as_ref(),
            &run.context,
        ),
        is_step: true,
        request_id,
    };
    Ok(match calls.drive(&call).await? {
        CallState::Succeeded(output) => StepOutcome::Done(output),
        CallState::Failed { error } => StepOutcome::Failed(error),
        CallState::Waiting => StepOutcome::Waiting,
        CallState::Pending { external_id } => StepOutcome::Pending { external_id },
    })
}

pub(super) fn input(
    literal: Option<&Map<String, Value>>,
    mapping: Option<&Map<String, Value>>,
    source: &Value,
) -> Value {
    let literal = literal.map(|fields| Value::Object(fields.clone()));
    input_mapping::build(literal.as_ref(), mapping, source)
}
