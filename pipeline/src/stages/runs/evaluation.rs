//! A rule-set evaluation as it is recorded (`rule_evaluations`, migration
//! `20261203000001_rule_evaluations.sql`): the rule set and version the step ran, each rule's
//! id, key, version, type and outcome, the decision, and the data the rules saw (the run's
//! context at the step), so a backtest can replay it. Recorded in the transaction that moves
//! the run past the step ([`advance`](super::advance)): once per run and step.

use serde_json::{Value, json};
use sqlx::{Postgres, Transaction};
use topics::definitions::Step;
use uuid::Uuid;

use super::advance::RunRow;
use crate::Error;
use topics::definitions::rules::RuleOutcome;

/// What a `rule_set` step evaluated, with the step's output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Evaluation {
    pub(crate) output: Value,
    pub(crate) rule_set_key: Option<String>,
    pub(crate) rule_set_version: Option<i32>,
    pub(crate) decision: RuleOutcome,
    pub(crate) rules: Vec<EvaluatedRule>,
    pub(crate) duration_ms: f64,
}

/// One rule of an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EvaluatedRule {
    /// An inline rule's id, or a named rule's key.
    pub(crate) id: String,
    /// A published rule's key and the version that ran (none when it has no published one).
    pub(crate) key: Option<String>,
    pub(crate) version: Option<i32>,
    pub(crate) kind: &'static str,
    pub(crate) outcome: RuleOutcome,
}

impl EvaluatedRule {
    pub(crate) fn inline(id: String) -> Self {
        Self {
            id,
            key: None,
            version: None,
            kind: "unknown",
            outcome: RuleOutcome::Error,
        }
    }

    pub(crate) fn named(key: &str, version: Option<i32>) -> Self {
        Self {
            id: key.to_owned(),
            key: Some(key.to_owned()),
            version,
            kind: "unknown",
            outcome: RuleOutcome::Error,
        }
    }

    /// As the step's output shows it.
    pub(crate) fn output(&self) -> Value {
        json!({"id": self.id, "type": self.kind, "outcome": self.outcome})
    }

    /// As the evaluation records it.
    fn recorded(&self) -> Value {
        let mut rule = self.output();
        if let Some(key) = &self.key {
            rule["key"] = json!(key);
            rule["version"] = json!(self.version);
        }
        rule
    }
}

/// Records `evaluation` of `step` of `run`, within the transaction that moves the run on.
pub(crate) async fn record(
    tx: &mut Transaction<'_, Postgres>,
    run: &RunRow,
    step: &Step,
    evaluation: &Evaluation,
) -> Result<(), Error> {
    let rules: Vec<Value> = evaluation
        .rules
        .iter()
        .map(EvaluatedRule::recorded)
        .collect();
    let keys: Vec<&str> = evaluation
        .rules
        .iter()
        .filter_map(|rule| rule.key.as_deref())
        .collect();
    sqlx::query(
        "INSERT INTO rule_evaluations (id, tenant_id, subject_id, run_id, workflow_key, \
         workflow_version, step_id, rule_set_key, rule_set_version, decision, rules, rule_keys, \
         data, duration_ms, evaluated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now()) \
         ON CONFLICT (run_id, step_id) DO NOTHING",
    )
    .bind(Uuid::now_v7())
    .bind(run.tenant_id)
    .bind(run.subject_id)
    .bind(run.id)
    .bind(&run.definition_key)
    .bind(run.definition_version)
    .bind(&step.id)
    .bind(&evaluation.rule_set_key)
    .bind(evaluation.rule_set_version)
    .bind(evaluation.decision.as_str())
    .bind(Value::Array(rules))
    .bind(keys)
    .bind(&run.context)
    .bind(evaluation.duration_ms as f32)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
