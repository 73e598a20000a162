//! A version replayed over one recorded evaluation: what its rules answer over the data the
//! recorded rules saw, the decision that makes, and whether it hits (fails) where the recorded
//! one did. App rules come back `skipped`, and nothing here can call an app: it is plain
//! computation over stored JSON (SPEC §2.7).
//!
//! - A **rule** version replaces the rule of its key in each recorded evaluation that ran it;
//!   the other rules keep their recorded outcomes. A hit is the rule failing.
//! - A **rule set** version runs all its rules (named ones at their published versions when the
//!   attempt started). A hit is the decision `fail`. An app rule comes back `skipped`, and
//!   counts in the decision as it was recorded when the evaluation recorded a rule of its id.
//!   Reasons name each failing rule's condition (`<id>: <path> <op> <value>`), or, for a rule
//!   version, the other rules that failed as recorded (`<id>: failed as recorded`).
//! - A **workflow** version is dry-run over a recorded run's data (its context at its last
//!   recorded evaluation): its `rule_set` steps in order, each step's output under its
//!   `outputKey` for the steps after it, `call_app` and `open_case` steps doing nothing (the
//!   recorded outputs of earlier calls are in the data). Its decision combines the steps'; a
//!   hit is the decision `fail`.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use topics::definitions::{Condition, Rule};
use uuid::Uuid;

use super::sample::Reads;
use topics::definitions::rules;

topics::labels::labels! {
    /// A rule's outcome in a replay, or as recorded.
    pub(crate) enum Verdict {
        Pass = "pass",
        Fail = "fail",
        Error = "error",
        Skipped = "skipped",
    }
}

impl Verdict {
    /// As `rule_evaluations` stores it (an unknown word reads as an error).
    pub(crate) fn stored(word: &str) -> Self {
        Self::parse(word).unwrap_or(Verdict::Error)
    }

    /// A set's decision from its rules': `fail` when any failed, else `error` when any erred,
    /// else `pass` (a skipped rule decides nothing).
    pub(crate) fn combined(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut combined = Verdict::Pass;
        for verdict in verdicts {
            match verdict {
                Verdict::Fail => return Verdict::Fail,
                Verdict::Error => combined = Verdict::Error,
                Verdict::Pass | Verdict::Skipped => {}
            }
        }
        combined
    }
}

/// One recorded evaluation (or, for a workflow, one recorded run) as a replay reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    pub(crate) id: Uuid,
    pub(crate) subject_id: Option<Uuid>,
    pub(crate) evaluated_at: DateTime<Utc>,
    pub(crate) decision: Verdict,
    pub(crate) rules: Vec<RecordedRule>,
    pub(crate) data: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordedRule {
    pub(crate) id: String,
    pub(crate) key: Option<String>,
    pub(crate) outcome: Verdict,
}

/// A rule of the replayed version: `rule` is `None` when a named rule has no published version
/// (it errs, as it would in a run).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VersionRule {
    pub(crate) id: String,
    pub(crate) rule: Option<Rule>,
}

/// A step of a replayed workflow version: a rule set's rules and where its output lands; any
/// other step is `None` (not run).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VersionStep {
    pub(crate) output_key: String,
    pub(crate) rules: Option<Vec<VersionRule>>,
}

/// The version a backtest replays, its named rules resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Version {
    Rule { key: String, rule: Rule },
    RuleSet { rules: Vec<VersionRule> },
    Workflow { steps: Vec<VersionStep> },
}

/// What the version made of one recorded evaluation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Replayed {
    pub(crate) decision: Verdict,
    pub(crate) recorded_hit: bool,
    pub(crate) hit: bool,
    /// The version's rules' outcomes.
    pub(crate) outcomes: Vec<Verdict>,
    /// Why it hit: each failing rule, one line each.
    pub(crate) reasons: Vec<String>,
}

impl Version {
    /// What its replay reads of each evaluation: the recorded rules only when it uses them.
    pub(crate) fn reads(&self) -> Reads {
        let rules = match self {
            Version::Rule { .. } | Version::Workflow { .. } => true,
            Version::RuleSet { rules } => rules
                .iter()
                .any(|rule| matches!(rule.rule, Some(Rule::App(_)))),
        };
        Reads { rules }
    }

    pub(crate) fn replay(&self, recorded: &Recorded) -> Replayed {
        match self {
            Version::Rule { key, rule } => replay_rule(key, rule, recorded),
            Version::RuleSet { rules } => {
                let (outcomes, reasons) = evaluate_all(rules, &recorded.data);
                let decision = decided(rules, &outcomes, recorded);
                Replayed {
                    decision,
                    recorded_hit: recorded.decision == Verdict::Fail,
                    hit: decision == Verdict::Fail,
                    outcomes,
                    reasons,
                }
            }
            Version::Workflow { steps } => dry_run(steps, recorded),
        }
    }
}

fn replay_rule(key: &str, rule: &Rule, recorded: &Recorded) -> Replayed {
    let verdict = evaluate(rule, &recorded.data);
    let mut reasons = Vec::new();
    let mut recorded_hit = false;
    let mut verdicts = Vec::with_capacity(recorded.rules.len());
    for other in &recorded.rules {
        if other.key.as_deref() == Some(key) {
            recorded_hit |= other.outcome == Verdict::Fail;
            if verdict == Verdict::Fail {
                reasons.push(reason(key, rule));
            }
            verdicts.push(verdict);
        } else {
            if other.outcome == Verdict::Fail {
                reasons.push(format!("{}: failed as recorded", other.id));
            }
            verdicts.push(other.outcome);
        }
    }
    let decision = Verdict::combined(verdicts);
    Replayed {
        decision,
        recorded_hit,
        hit: verdict == Verdict::Fail,
        outcomes: vec![verdict],
        reasons,
    }
}

fn dry_run(steps: &[VersionStep], recorded: &Recorded) -> Replayed {
    let mut data = recorded.data.clone();
    let (mut outcomes, mut reasons, mut decisions) = (Vec::new(), Vec::new(), Vec::new());
    for step in steps {
        let Some(rules) = &step.rules else { continue };
        let (verdicts, why) = evaluate_all(rules, &data);
        let decision = decided(rules, &verdicts, recorded);
        let output = json!({
            "outcome": decision.as_str(),
            "rules": rules.iter().zip(&verdicts)
                .map(|(rule, verdict)| json!({"id": rule.id, "outcome": verdict.as_str()}))
                .collect::<Vec<_>>(),
        });
        if let Value::Object(fields) = &mut data {
            fields.insert(step.output_key.clone(), output);
        } else {
            data = Value::Object(Map::from_iter([(step.output_key.clone(), output)]));
        }
        outcomes.extend(verdicts);
        reasons.extend(why);
        decisions.push(decision);
    }
    let decision = Verdict::combined(decisions);
    Replayed {
        decision,
        recorded_hit: recorded.decision == Verdict::Fail,
        hit: decision == Verdict::Fail,
        outcomes,
        reasons,
    }
}

/// The decision of a set whose rules answered `verdicts`: an app rule, skipped, counts as it
/// was recorded when the recorded evaluation has a rule of its id (it would have answered the
/// same to the same call), so not calling apps changes no decision by itself.
fn decided(rules: &[VersionRule], verdicts: &[Verdict], recorded: &Recorded) -> Verdict {
    Verdict::combined(rules.iter().zip(verdicts).map(|(rule, verdict)| {
        if *verdict != Verdict::Skipped {
            return *verdict;
        }
        recorded
            .rules
            .iter()
            .find(|was| was.id == rule.id)
            .map_or(Verdict::Skipped, |was| was.outcome)
    }))
}

/// Each rule's verdict over `data`, and a reason per failing one.
fn evaluate_all(rules: &[VersionRule], data: &Value) -> (Vec<Verdict>, Vec<String>) {
    let mut reasons = Vec::new();
    let verdicts = rules
        .iter()
        .map(|version_rule| match &version_rule.rule {
            None => Verdict::Error,
            Some(rule) => {
                let verdict = evaluate(rule, data);
                if verdict == Verdict::Fail {
                    reasons.push(reason(&version_rule.id, rule));
                }
                verdict
            }
        })
        .collect();
    (verdicts, reasons)
}

/// A field rule over the data; an app rule is skipped: no app is called in a replay.
fn evaluate(rule: &Rule, data: &Value) -> Verdict {
    match rule {
        Rule::App(_) => Verdict::Skipped,
        Rule::Field(field) => match rules::decide(data, &field.path, &field.fail_when) {
            rules::RuleOutcome::Pass => Verdict::Pass,
            rules::RuleOutcome::Fail => Verdict::Fail,
            rules::RuleOutcome::Error => Verdict::Error,
        },
    }
}

/// `<id>: <path> <op> <value>`: which rule failed and on what condition (never the value the
/// data held: reasons show the rule, the data stays in the evaluation).
fn reason(id: &str, rule: &Rule) -> String {
    match rule {
        Rule::Field(field) => format!("{id}: {} {}", field.path, condition(&field.fail_when)),
        Rule::App(app) => format!("{id}: {} {}", app.result_path, condition(&app.fail_when)),
    }
}

fn condition(condition: &Condition) -> String {
    let op = serde_json::to_value(condition.op)
        .ok()
        .and_then(|op| op.as_str().map(str::to_owned))
        .unwrap_or_default();
    if condition.value.is_null() {
        op
    } else {
        format!("{op} {}", condition.value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(body: Value) -> Rule {
        serde_json::from_value(body).expect("a rule")
    }

    fn over(limit: i64) -> Rule {
        rule(json!({"type": "field", "path": "score", "failWhen": {"op": "gt", "value": limit}}))
    }

    fn recorded(score: i64, rules: &[(&str, Option<&str>, Verdict)]) -> Recorded {
        let rules: Vec<RecordedRule> = rules
            .iter()
            .map(|(id, key, outcome)| RecordedRule {
                id: (*id).to_owned(),
                key: key.map(str::to_owned),
                outcome: *outcome,
            })
            .collect();
        Recorded {
            id: Uuid::nil(),
            subject_id: None,
            evaluated_at: Utc::now(),
            decision: Verdict::combined(rules.iter().map(|r| r.outcome)),
            rules,
            data: json!({"score": score}),
        }
    }

    #[test]
    fn a_rule_version_replaces_its_key_and_keeps_the_other_rules_recorded_outcomes() {
        let version = Version::Rule {
            key: "score".into(),
            rule: over(40),
        };
        let was = recorded(
            45,
            &[
                ("score", Some("score"), Verdict::Pass),
                ("flag", None, Verdict::Pass),
            ],
        );
        let now = version.replay(&was);
        assert_eq!(
            (
                now.decision,
                now.recorded_hit,
                now.hit,
                now.outcomes.as_slice()
            ),
            (Verdict::Fail, false, true, [Verdict::Fail].as_slice())
        );
        assert_eq!(now.reasons, ["score: score gt 40"]);
        // Another rule that failed keeps the decision failed, whatever the version says.
        let flagged = recorded(
            10,
            &[
                ("score", Some("score"), Verdict::Pass),
                ("flag", None, Verdict::Fail),
            ],
        );
        let now = version.replay(&flagged);
        assert_eq!((now.decision, now.hit), (Verdict::Fail, false));
        assert_eq!(now.reasons, ["flag: failed as recorded"]);
        // Whatever the order: the rule's own recorded hit is seen after another's failure.
        let both = recorded(
            60,
            &[
                ("flag", None, Verdict::Fail),
                ("score", Some("score"), Verdict::Fail),
            ],
        );
        let now = version.replay(&both);
        assert_eq!((now.recorded_hit, now.hit), (true, true));
        assert_eq!(
            now.reasons,
            ["flag: failed as recorded", "score: score gt 40"]
        );
    }

    #[test]
    fn app_rules_are_skipped_and_decide_nothing_and_unknown_rules_err() {
        let app = rule(json!({"type": "app", "app": "kyc", "action": "check",
                              "resultPath": "hit", "failWhen": {"op": "eq", "value": true}}));
        let set = Version::RuleSet {
            rules: vec![
                VersionRule {
                    id: "pep".into(),
                    rule: Some(app),
                },
                VersionRule {
                    id: "score".into(),
                    rule: Some(over(50)),
                },
            ],
        };
        let now = set.replay(&recorded(20, &[]));
        assert_eq!(now.outcomes, [Verdict::Skipped, Verdict::Pass]);
        assert_eq!(now.decision, Verdict::Pass);
        // An app rule recorded failing keeps the decision failed: skipping it changes nothing.
        let pep = recorded(
            20,
            &[("pep", None, Verdict::Fail), ("score", None, Verdict::Pass)],
        );
        let now = set.replay(&pep);
        assert_eq!(now.outcomes, [Verdict::Skipped, Verdict::Pass]);
        assert_eq!(
            (now.decision, now.recorded_hit, now.hit),
            (Verdict::Fail, true, true)
        );
        let unknown = Version::RuleSet {
            rules: vec![VersionRule {
                id: "gone".into(),
                rule: None,
            }],
        };
        assert_eq!(unknown.replay(&recorded(20, &[])).decision, Verdict::Error);
    }

    #[test]
    fn a_workflow_dry_run_feeds_each_rule_sets_output_to_the_steps_after_it() {
        let chained = rule(json!({"type": "field", "path": "first.outcome",
                                  "failWhen": {"op": "eq", "value": "fail"}}));
        let version = Version::Workflow {
            steps: vec![
                VersionStep {
                    output_key: "call".into(),
                    rules: None,
                },
                VersionStep {
                    output_key: "first".into(),
                    rules: Some(vec![VersionRule {
                        id: "score".into(),
                        rule: Some(over(50)),
                    }]),
                },
                VersionStep {
                    output_key: "second".into(),
                    rules: Some(vec![VersionRule {
                        id: "chained".into(),
                        rule: Some(chained),
                    }]),
                },
            ],
        };
        let now = version.replay(&recorded(70, &[]));
        assert_eq!(now.outcomes, [Verdict::Fail, Verdict::Fail]);
        assert_eq!((now.decision, now.hit), (Verdict::Fail, true));
        let now = version.replay(&recorded(30, &[]));
        assert_eq!(now.outcomes, [Verdict::Pass, Verdict::Pass]);
    }

    #[test]
    fn a_set_fails_on_any_failure_errs_on_an_error_without_one_and_skips_nothing() {
        use Verdict::{Error, Fail, Pass, Skipped};
        assert_eq!(Verdict::combined([]), Pass);
        assert_eq!(Verdict::combined([Skipped, Pass]), Pass);
        assert_eq!(Verdict::combined([Skipped, Error]), Error);
        assert_eq!(Verdict::combined([Error, Fail]), Fail);
        for verdict in [Pass, Fail, Error, Skipped] {
            assert_eq!(Verdict::stored(verdict.as_str()), verdict);
        }
    }
}
