//! A `rule_set` step: its rules in order, each `pass`, `fail` or `error` ([`rules`]): a field
//! rule compares a value of the context, an app rule calls a synchronous action with its own
//! call (the action's retries, not the step's) and compares the output's `resultPath`. Rules
//! named by key, and a rule set named by `ruleSet`, are their published versions when the step
//! runs. The step's output is `{outcome, rules: [{id, type, outcome}]}`, and the whole
//! evaluation is recorded ([`evaluation`]) as the run moves past the step.
//!
//! Spans `rule_set.evaluate` (`svc.rule_set.key`, `.band`, `svc.rule.count`,
//! `svc.rules.outcome`) and, inside, `rule.evaluate` per rule (`svc.rule.key`, `.type`,
//! `.outcome`); metrics `svc.rule.evaluation.duration` and `svc.rule_set.evaluation.duration`
//! (SPEC, Operations reference); `svc.decision.count` once the run moves past the step
//! (`advance`).

use std::time::Instant;

use serde_json::{Value, json};
use topics::definitions::{Rule, RuleEntry, RuleSet, RuleSetStep, Step};
use tracing::Instrument;

use super::advance::RunRow;
use super::call::{Call, CallState, Calls};
use super::evaluation::{EvaluatedRule, Evaluation};
use super::steps::{self, StepOutcome};
use crate::Error;
use topics::definitions::rules::{self, RuleOutcome};

/// The published definition a step or an entry named: its version and body.
struct Named {
    version: i32,
    body: Value,
}

pub(super) async fn run(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    set: &RuleSetStep,
    request_id: &str,
) -> Result<StepOutcome, Error> {
    let span = tracing::info_span!(
        "rule_set.evaluate",
        svc.tenant_id = %run.tenant_id,
        svc.run_id = %run.id,
        svc.rule_set.key = set.rule_set.as_deref().unwrap_or("inline"),
        svc.rule_set.band = tracing::field::Empty,
        svc.rule.count = tracing::field::Empty,
        svc.rules.outcome = tracing::field::Empty,
    );
    evaluate(calls, run, step, set, request_id)
        .instrument(span)
        .await
}

async fn evaluate(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    set: &RuleSetStep,
    request_id: &str,
) -> Result<StepOutcome, Error> {
    let started = Instant::now();
    let (entries, rule_set_version) = match &set.rule_set {
        Some(key) => match published(calls, run, "rule_set", key).await? {
            Some(named) => (
                serde_json::from_value::<RuleSet>(named.body)
                    .map_or_else(|_| Vec::new(), |set| set.rules),
                Some(named.version),
            ),
            None => return Ok(StepOutcome::Failed(format!("unknown_rule_set: {key}"))),
        },
        None => (set.rules.clone(), None),
    };
    tracing::Span::current().record("svc.rule.count", entries.len());
    let mut evaluated = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let (mut named, rule) = match entry {
            RuleEntry::Inline(rule) => (
                EvaluatedRule::inline(rules::rule_id(rule, index)),
                Some(rule.clone()),
            ),
            RuleEntry::Named { rule: key } => match published(calls, run, "rule", key).await? {
                Some(found) => (
                    EvaluatedRule::named(key, Some(found.version)),
                    serde_json::from_value::<Rule>(found.body).ok(),
                ),
                None => (EvaluatedRule::named(key, None), None),
            },
        };
        let span = tracing::info_span!(
            "rule.evaluate",
            svc.rule.key = %named.id,
            "svc.rule.type" = tracing::field::Empty,
            svc.rule.outcome = tracing::field::Empty,
        );
        let rule_started = Instant::now();
        let Some((kind, outcome)) =
            rule_outcome(calls, run, step, (index, rule.as_ref()), request_id)
                .instrument(span.clone())
                .await?
        else {
            return Ok(StepOutcome::Waiting);
        };
        span.record("svc.rule.type", kind);
        span.record("svc.rule.outcome", outcome.as_str());
        metrics::histogram!(
            "svc.rule.evaluation.duration",
            "tenant" => run.tenant_id.to_string(),
            "rule_type" => kind,
            "outcome" => outcome.as_str(),
        )
        .record(rule_started.elapsed().as_secs_f64() * 1000.0);
        named.kind = kind;
        named.outcome = outcome;
        evaluated.push(named);
    }
    let decision = rules::combined(evaluated.iter().map(|rule| rule.outcome));
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let set_key = set.rule_set.clone().unwrap_or_else(|| "inline".to_owned());
    let current = tracing::Span::current();
    current.record("svc.rule_set.band", decision.as_str());
    current.record("svc.rules.outcome", decision.as_str());
    metrics::histogram!(
        "svc.rule_set.evaluation.duration",
        "tenant" => run.tenant_id.to_string(),
        "rule_set_key" => set_key,
        "band" => decision.as_str(),
    )
    .record(elapsed_ms);
    let output = json!({
        "outcome": decision,
        "rules": evaluated.iter().map(EvaluatedRule::output).collect::<Vec<_>>(),
    });
    Ok(StepOutcome::Evaluated(Box::new(Evaluation {
        output,
        rule_set_key: set.rule_set.clone(),
        rule_set_version,
        decision,
        rules: evaluated,
        duration_ms: elapsed_ms,
    })))
}

/// One rule's type and outcome; `None` while an app rule's call waits for a retry.
async fn rule_outcome(
    calls: &Calls,
    run: &RunRow,
    step: &Step,
    (index, rule): (usize, Option<&Rule>),
    request_id: &str,
) -> Result<Option<(&'static str, RuleOutcome)>, Error> {
    Ok(Some(match rule {
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
                input: steps::input(
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
                CallState::Waiting => return Ok(None),
                CallState::Failed { .. } | CallState::Pending { .. } => ("app", RuleOutcome::Error),
            }
        }
    }))
}

/// The published version of the tenant's `kind` definition `key`.
async fn published(
    calls: &Calls,
    run: &RunRow,
    kind: &str,
    key: &str,
) -> Result<Option<Named>, Error> {
    let found = readers::definitions::published(
        &calls.pool,
        readers::Tenant::new(run.tenant_id),
        kind,
        key,
    )
    .await?;
    Ok(found.map(|version| Named {
        version: version.version,
        body: version.body,
    }))
}
