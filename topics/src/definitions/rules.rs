//! How a rule decides (SPEC §4.12 rule 7 for app rules): the compared value is the one at the
//! rule's path (a field rule: in the run context; an app rule: `resultPath` in the action's
//! output), and `failWhen {op, value}` says when the rule fails. A rule set's outcome is `fail`
//! when any rule failed, else `error` when a rule could not be evaluated (its app call failed),
//! else `pass`.
//!
//! The one evaluator of rules, beside their definitions: the pipeline's runs stage and
//! backtests decide through it, and the history seeder records what it answers. The dot path
//! it reads ([`resolve`]) is the one an app call's `inputMapping` reads too.

use serde_json::Value;

use super::{Condition, Op, Rule};
use crate::labels::labels;

labels! {
    /// One rule's outcome (the `outcome` label of `svc.rule.evaluation.duration`).
    pub enum RuleOutcome {
        Pass = "pass",
        Fail = "fail",
        Error = "error",
    }
}

/// The outcome of `condition` for the value at `path` of `data`.
pub fn decide(data: &Value, path: &str, condition: &Condition) -> RuleOutcome {
    if fails(resolve(data, path), condition) {
        RuleOutcome::Fail
    } else {
        RuleOutcome::Pass
    }
}

/// The value at a dot path (`a.b.0.c`: object keys, and array indexes where the value is an
/// array), or `None` when any segment does not resolve. A key holding `null` resolves to it.
pub fn resolve<'v>(source: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return None;
    }
    path.split('.')
        .try_fold(source, |value, segment| match value {
            Value::Object(fields) => fields.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// Whether `condition` holds for `value` (`None`: the path does not resolve). An ordered
/// comparison of anything but two numbers does not hold; `in` needs an array of candidates.
fn fails(value: Option<&Value>, condition: &Condition) -> bool {
    let expected = &condition.value;
    match (condition.op, value) {
        (Op::Exists, value) => value.is_some_and(|v| !v.is_null()),
        (Op::Missing, value) => value.is_none_or(Value::is_null),
        (_, None) => false,
        (Op::Eq, Some(value)) => equal(value, expected),
        (Op::Ne, Some(value)) => !equal(value, expected),
        (Op::In, Some(value)) => expected
            .as_array()
            .is_some_and(|candidates| candidates.iter().any(|c| equal(value, c))),
        (op, Some(value)) => match (value.as_f64(), expected.as_f64()) {
            (Some(value), Some(expected)) => match op {
                Op::Gt => value > expected,
                Op::Gte => value >= expected,
                Op::Lt => value < expected,
                _ => value <= expected,
            },
            _ => false,
        },
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// An inline rule's id: its own, else its index in the set.
pub fn rule_id(rule: &Rule, index: usize) -> String {
    let id = match rule {
        Rule::App(rule) => rule.id.clone(),
        Rule::Field(rule) => rule.id.clone(),
    };
    id.unwrap_or_else(|| index.to_string())
}

/// A rule set's outcome from its rules'.
pub fn combined(outcomes: impl IntoIterator<Item = RuleOutcome>) -> RuleOutcome {
    let mut combined = RuleOutcome::Pass;
    for outcome in outcomes {
        match outcome {
            RuleOutcome::Fail => return RuleOutcome::Fail,
            RuleOutcome::Error => combined = RuleOutcome::Error,
            RuleOutcome::Pass => {}
        }
    }
    combined
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn when(op: &str, value: Value) -> Condition {
        serde_json::from_value(json!({"op": op, "value": value})).expect("a condition")
    }

    #[test]
    fn each_operator_compares_the_value_at_the_path() {
        let data = json!({"kyc": {"score": 0.4, "country": "FR", "hits": 0, "pep": null}});
        let cases = [
            ("kyc.score", when("lt", json!(0.5)), RuleOutcome::Fail),
            ("kyc.score", when("gte", json!(0.5)), RuleOutcome::Pass),
            ("kyc.score", when("lte", json!(0.4)), RuleOutcome::Fail),
            ("kyc.hits", when("gt", json!(0)), RuleOutcome::Pass),
            ("kyc.hits", when("eq", json!(0.0)), RuleOutcome::Fail),
            ("kyc.country", when("ne", json!("FR")), RuleOutcome::Pass),
            (
                "kyc.country",
                when("in", json!(["IR", "FR"])),
                RuleOutcome::Fail,
            ),
            ("kyc.country", when("in", json!("FR")), RuleOutcome::Pass),
            ("kyc.pep", when("exists", Value::Null), RuleOutcome::Pass),
            ("kyc.pep", when("missing", Value::Null), RuleOutcome::Fail),
            (
                "kyc.nothing",
                when("missing", Value::Null),
                RuleOutcome::Fail,
            ),
            (
                "kyc.country",
                when("exists", Value::Null),
                RuleOutcome::Fail,
            ),
        ];
        for (path, condition, expected) in cases {
            assert_eq!(
                decide(&data, path, &condition),
                expected,
                "{path} {condition:?}"
            );
        }
    }

    #[test]
    fn a_path_that_does_not_resolve_or_a_mismatched_type_does_not_fail_a_comparison() {
        let data = json!({"kyc": {"country": "FR"}});
        assert_eq!(
            decide(&data, "kyc.score", &when("lt", json!(0.5))),
            RuleOutcome::Pass
        );
        assert_eq!(
            decide(&data, "kyc.country", &when("gt", json!(1))),
            RuleOutcome::Pass
        );
        assert_eq!(
            decide(&data, "kyc.score", &when("ne", json!(1))),
            RuleOutcome::Pass
        );
    }

    #[test]
    fn rule_7_an_app_rule_compares_the_outputs_result_path_with_fail_when() {
        let output = json!({"hits": [{"list": "PEP", "score": 0.9}], "total": 1});
        assert_eq!(
            decide(&output, "hits.0.list", &when("eq", json!("PEP"))),
            RuleOutcome::Fail
        );
        assert_eq!(
            decide(&output, "total", &when("gt", json!(3))),
            RuleOutcome::Pass
        );
        // The path is into the output, not the run's context.
        assert_eq!(
            decide(&output, "kyc.total", &when("exists", Value::Null)),
            RuleOutcome::Pass
        );
    }

    #[test]
    fn any_failure_fails_the_set_and_an_error_without_one_errs_it() {
        use RuleOutcome::{Error, Fail, Pass};
        assert_eq!(combined([]), Pass);
        assert_eq!(combined([Pass, Pass]), Pass);
        assert_eq!(combined([Pass, Error]), Error);
        assert_eq!(combined([Error, Fail, Pass]), Fail);
    }
}
