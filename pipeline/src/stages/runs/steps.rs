//! What each kind of step does:
//!
//! - `call_app`: one app call ([`call`](super::call)) with the input built from the context
//!   (SPEC §4.12); its output is the step's.
//! - `rule_set`: its rules in order, each `pass`, `fail` or `error` ([`rules`](super::rules)):
//!   a field rule compares a value of the context, an app rule calls a synchronous action with
//!   its own call (the action's retries, not the step's) and compares the output's
//!   `resultPath`. Rules named by key, and a rule set named by `ruleSet`, are their published
//!   versions when the step runs. The step's output is `{outcome, rules: [{id, type, outcome}]}`.
//! - `open_case`: a case for the run's subject (README "Cases"), when its `when` compares true
//!   of the context (always without one); [`advance`](super::advance) inserts it in the
//!   transaction that moves the run on, once per run and step.

use std::time::Instant;

use serde_json::{Map, Value, json};
use topics::cases::Opening;
use topics::definitions::{
    CallApp, OpenCaseStep, Rule, RuleEntry, RuleSet, RuleSetStep, Step, StepRun,
};

use super::advance::RunRow;
use super::call::{Call, CallState, Calls};
use super::input_mapping;
use super::rules::{self, RuleOutcome};
use crate::Error;

/// How far a step got.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepOutcome {
    Done(Value),
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
        StepRun::RuleSet(set) => rule_set_step(calls, run, step, set, request_id).await,
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

fn input(
    literal: Option<&Map<String, Value>>,
    mapping: Option<&Map<String, Value>>,
    source: &Value,
) -> Value {
    let literal = literal.map(|fields| Value::Object(fields.clone()));
    input_mapping::build(literal.as_ref(), mapping, source)
}

async fn rule_set_step(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    set: &RuleSetStep,
    request_id: &str,
) -> Result<StepOutcome, Error> {
    let started = Instant::now();
    let entries = match &set.rule_set {
        Some(key) => match published(calls, run, "rule_set", key).await? {
            Some(body) => serde_json::from_value::<RuleSet>(body)
                .map_or_else(|_| Vec::new(), |named| named.rules),
            None => return Ok(StepOutcome::Failed(format!("unknown_rule_set: {key}"))),
        },
        None => set.rules.clone(),
    };
    let mut evaluated = Vec::with_capacity(entries.len());
    let mut outcomes = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let (id, rule) = match entry {
            RuleEntry::Inline(rule) => (rule_id(rule, index), Some(rule.clone())),
            RuleEntry::Named { rule: key } => {
                let body = published(calls, run, "rule", key).await?;
                (
                    key.clone(),
                    body.and_then(|b| serde_json::from_value::<Rule>(b).ok()),
                )
            }
        };
        let rule_started = Instant::now();
        let (kind, outcome) = match &rule {
            None => ("unknown", RuleOutcome::Error),
            Some(Rule::Field(field)) => (
                "field",
                rules::decide(&run.context, &field.path, &field.fail_when),
            ),
            Some(Rule::App(app_rule)) => {
                let call = Call {
                    run_id: run.id,
                    tenant: run.tenant_id,
                    subject_id: run.subject_id,
                    step_id: &step.id,
                    key: format!("{}/rules/{index}", step.id),
                    app: &app_rule.app,
                    action: &app_rule.action,
                    input: input(
                        app_rule.input.as_ref(),
                        app_rule.input_mapping.as_ref(),
                        &run.context,
                    ),
                    is_step: false,
                    request_id,
                };
                match calls.drive(&call).await? {
                    CallState::Succeeded(output) => (
                        "app",
                        rules::decide(&output, &app_rule.result_path, &app_rule.fail_when),
                    ),
                    CallState::Waiting => return Ok(StepOutcome::Waiting),
                    CallState::Failed { .. } | CallState::Pending { .. } => {
                        ("app", RuleOutcome::Error)
                    }
                }
            }
        };
        metrics::histogram!(
            "svc.rule.evaluation.duration",
            "tenant" => run.tenant_id.to_string(),
            "rule_type" => kind,
            "outcome" => outcome.as_str(),
        )
        .record(rule_started.elapsed().as_secs_f64() * 1000.0);
        evaluated.push(json!({"id": id, "type": kind, "outcome": outcome}));
        outcomes.push(outcome);
    }
    let outcome = rules::combined(outcomes);
    metrics::histogram!(
        "svc.rule_set.evaluation.duration",
        "tenant" => run.tenant_id.to_string(),
        "rule_set_key" => set.rule_set.clone().unwrap_or_else(|| "inline".to_owned()),
        "band" => outcome.as_str(),
    )
    .record(started.elapsed().as_secs_f64() * 1000.0);
    Ok(StepOutcome::Done(
        json!({"outcome": outcome, "rules": evaluated}),
    ))
}

/// An inline rule's id: its own, else its index in the set.
fn rule_id(rule: &Rule, index: usize) -> String {
    let id = match rule {
        Rule::App(rule) => rule.id.clone(),
        Rule::Field(rule) => rule.id.clone(),
    };
    id.unwrap_or_else(|| index.to_string())
}

/// The published body of the tenant's `kind` definition `key`.
async fn published(
    calls: &Calls,
    run: &RunRow,
    kind: &str,
    key: &str,
) -> Result<Option<Value>, Error> {
    let found = readers::definitions::published(
        &calls.pool,
        readers::Tenant::new(run.tenant_id),
        kind,
        key,
    )
    .await?;
    Ok(found.map(|version| version.body))
}
