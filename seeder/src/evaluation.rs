//! Rule evaluations beside the seeded runs (`rule_evaluations`), so backtests have history to
//! replay: every tenant has rule set `screening` (6 rules) evaluated once a run's first step
//! is answered, and `risk-checks` (20 rules, half of them published rules it names) once the
//! run completes. What the rules see is the run's context with the `signals` a risk team
//! scores (drawn from the run's id, like the context, so the invocations stay as they were);
//! each rule's recorded outcome is what the engine's own evaluator answers over that data
//! (`topics::definitions::rules`), so a backtest of the published version changes nothing.
//!
//! The definitions (the named rules and both rule sets, version 1, published) are written once
//! per tenant before the history ([`define`]).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};
use sqlx::PgConnection;
use topics::definitions::Rule;
use topics::definitions::rules::{self, RuleOutcome};
use uuid::Uuid;

use super::population::Population;
use super::random;
use crate::Error;

/// Who wrote the seeded definitions.
const DEFINED_BY: &str = "seed-history";

/// A rule of a seeded rule set: inline, or a published rule it names by `id`.
#[derive(Debug)]
struct SeededRule {
    id: &'static str,
    named: bool,
    rule: Rule,
}

/// A seeded rule set, the step that evaluates it, and its rules.
#[derive(Debug)]
pub(super) struct RuleSet {
    pub(super) key: &'static str,
    rules: Vec<SeededRule>,
}

/// Both seeded rule sets: `screening` after a run's first step, `risk-checks` at its end.
#[derive(Debug)]
pub(super) struct RuleBook {
    pub(super) screening: RuleSet,
    pub(super) risk_checks: RuleSet,
}

/// One evaluation, ready to copy.
#[derive(Debug)]
pub(super) struct Evaluation {
    pub(super) id: Uuid,
    pub(super) decision: RuleOutcome,
    /// `[{id, key?, version?, type, outcome}]`, as the runs stage records it.
    pub(super) rules: Value,
    pub(super) rule_keys: Vec<&'static str>,
}

/// `(id, named, path, op, value)` of each rule.
type RuleLine = (&'static str, bool, &'static str, &'static str, Value);

fn set(key: &'static str, lines: Vec<RuleLine>) -> RuleSet {
    let rules = lines
        .into_iter()
        .map(|(id, named, path, op, value)| SeededRule {
            id,
            named,
            rule: serde_json::from_value(
                json!({"type": "field", "path": path, "failWhen": {"op": op, "value": value}}),
            )
            .unwrap_or_else(|error| panic!("seeded rule {id} does not read: {error}")),
        })
        .collect();
    RuleSet { key, rules }
}

impl RuleBook {
    pub(super) fn new() -> Self {
        let screening = set(
            "screening",
            vec![
                (
                    "sanctioned-country",
                    true,
                    "signals.country",
                    "in",
                    json!(["IR", "KP", "SY"]),
                ),
                ("pep", true, "signals.pep", "eq", json!(true)),
                ("minor", false, "signals.age", "lt", json!(18)),
                (
                    "disposable-email",
                    false,
                    "signals.emailDomain",
                    "in",
                    json!(["mailinator.com", "tempmail.io"]),
                ),
                (
                    "emulator",
                    false,
                    "signals.device.emulator",
                    "eq",
                    json!(true),
                ),
                ("no-channel", false, "channel", "missing", Value::Null),
            ],
        );
        // Each rule fires on a tail of its signal (0.5 to 4 % of runs): about one run in five
        // fails the set and goes to review.
        let risk_checks = set(
            "risk-checks",
            vec![
                ("low-kyc-score", true, "signals.kycScore", "lt", json!(0.02)),
                ("large-amount", true, "signals.amount", "gt", json!(11800)),
                ("high-velocity", true, "signals.velocity", "gt", json!(95)),
                ("chargebacks", true, "signals.chargebacks", "gt", json!(2)),
                (
                    "new-device",
                    true,
                    "signals.device.ageDays",
                    "lt",
                    json!(30),
                ),
                ("vpn", true, "signals.device.vpn", "eq", json!(true)),
                (
                    "country-mismatch",
                    true,
                    "signals.device.countryMismatch",
                    "eq",
                    json!(true),
                ),
                (
                    "sanctions-hit",
                    true,
                    "signals.hits.0.score",
                    "gt",
                    json!(0.98),
                ),
                (
                    "expired-document",
                    true,
                    "signals.documentExpired",
                    "eq",
                    json!(true),
                ),
                ("pep-match", true, "signals.pep", "eq", json!(true)),
                (
                    "very-low-kyc-score",
                    false,
                    "signals.kycScore",
                    "lt",
                    json!(0.005),
                ),
                (
                    "very-large-amount",
                    false,
                    "signals.amount",
                    "gt",
                    json!(11950),
                ),
                ("burst", false, "signals.velocity", "gt", json!(98)),
                ("implausible-age", false, "signals.age", "gt", json!(95)),
                (
                    "crypto-currency",
                    false,
                    "signals.currency",
                    "eq",
                    json!("BTC"),
                ),
                (
                    "adverse-media",
                    false,
                    "signals.hits.1.score",
                    "gt",
                    json!(0.99),
                ),
                (
                    "risky-country",
                    false,
                    "signals.country",
                    "in",
                    json!(["RU", "IR"]),
                ),
                ("no-subject", false, "subjectRef", "missing", Value::Null),
                (
                    "old-device",
                    false,
                    "signals.device.ageDays",
                    "gt",
                    json!(3600),
                ),
                (
                    "disposable-email",
                    false,
                    "signals.emailDomain",
                    "eq",
                    json!("mailinator.com"),
                ),
            ],
        );
        Self {
            screening,
            risk_checks,
        }
    }
}

impl RuleSet {
    /// Evaluates the set over `data`, as a run at `at` (microseconds) would have recorded it.
    pub(super) fn evaluate(&self, run: Uuid, at: i64, data: &Value) -> Evaluation {
        // Both halves of the run's id: a v7 id's first half is mostly its millisecond.
        let (high, low) = run.as_u64_pair();
        let mut rng = SmallRng::seed_from_u64(random::mix(high ^ random::mix(low ^ self.seed())));
        let mut recorded = Vec::with_capacity(self.rules.len());
        let mut outcomes = Vec::with_capacity(self.rules.len());
        let mut keys = Vec::new();
        for seeded in &self.rules {
            let Rule::Field(field) = &seeded.rule else {
                continue;
            };
            let outcome = rules::decide(data, &field.path, &field.fail_when);
            let mut rule = json!({"id": seeded.id, "type": "field", "outcome": outcome});
            if seeded.named {
                rule["key"] = json!(seeded.id);
                rule["version"] = json!(1);
                keys.push(seeded.id);
            }
            recorded.push(rule);
            outcomes.push(outcome);
        }
        Evaluation {
            id: random::uuid_v7(&mut rng, at),
            decision: rules::combined(outcomes),
            rules: Value::Array(recorded),
            rule_keys: keys,
        }
    }

    fn seed(&self) -> u64 {
        self.key
            .bytes()
            .fold(0, |seed, byte| random::mix(seed ^ u64::from(byte)))
    }

    /// The set's body, as `definition_versions` holds it.
    fn body(&self) -> Value {
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|seeded| {
                if seeded.named {
                    json!({"rule": seeded.id})
                } else {
                    let mut rule = serde_json::to_value(&seeded.rule).unwrap_or(Value::Null);
                    rule["id"] = json!(seeded.id);
                    rule
                }
            })
            .collect();
        json!({ "rules": rules })
    }
}

/// What the rules of run `run` see: its context (`context`, a JSON object) with the
/// `signals` scored about it.
pub(super) fn data(run: Uuid, context: &str) -> Value {
    let rng = &mut SmallRng::seed_from_u64(random::mix(run.as_u64_pair().1 ^ 0x5eed));
    let mut fields: Map<String, Value> = serde_json::from_str(context).unwrap_or_default();
    let score = |rng: &mut SmallRng| (rng.random::<f64>() * 1000.0).round() / 1000.0;
    let signals = json!({
        "kycScore": score(rng),
        "amount": (rng.random::<f64>() * 12_000.0 * 100.0).round() / 100.0,
        "currency": weighted(rng, &[("EUR", 60.0), ("GBP", 20.0), ("USD", 19.5), ("BTC", 0.5)]),
        "velocity": rng.random_range(0..100),
        "chargebacks": if rng.random_bool(0.03) { rng.random_range(1..7) } else { 0 },
        "age": rng.random_range(16..97),
        "country": weighted(rng, &[("GB", 30.0), ("FR", 20.0), ("DE", 20.0), ("US", 15.0),
                                   ("ES", 8.0), ("IT", 5.5), ("RU", 1.0), ("IR", 0.5)]),
        "emailDomain": weighted(rng, &[("gmail.com", 55.0), ("outlook.com", 30.0),
                                       ("corp.example", 14.0), ("mailinator.com", 1.0)]),
        "pep": rng.random_bool(0.01),
        "documentExpired": rng.random_bool(0.01),
        "hits": [{"list": "SANCTIONS", "score": score(rng)}, {"list": "ADVERSE_MEDIA", "score": score(rng)}],
        "device": {
            "emulator": rng.random_bool(0.01),
            "vpn": rng.random_bool(0.02),
            "ageDays": rng.random_range(0..3650),
            "countryMismatch": rng.random_bool(0.02),
        },
    });
    fields.insert("signals".to_owned(), signals);
    Value::Object(fields)
}

/// One of `choices`, by weight.
fn weighted(rng: &mut SmallRng, choices: &[(&str, f64)]) -> String {
    let total: f64 = choices.iter().map(|(_, weight)| weight).sum();
    let mut left = rng.random::<f64>() * total;
    for (choice, weight) in choices {
        if left < *weight {
            return (*choice).to_owned();
        }
        left -= weight;
    }
    choices
        .last()
        .map(|(choice, _)| (*choice).to_owned())
        .unwrap_or_default()
}

/// Writes the rules and rule sets every tenant's evaluations name, version 1, published; a
/// tenant that has them (a second seed) keeps its own.
pub(super) async fn define(
    connection: &mut PgConnection,
    population: &Population,
    book: &RuleBook,
) -> Result<(), Error> {
    let mut definitions: Vec<(&str, &str, Value)> = Vec::new();
    for set in [&book.screening, &book.risk_checks] {
        definitions.push(("rule_set", set.key, set.body()));
        for seeded in set.rules.iter().filter(|seeded| seeded.named) {
            let body = serde_json::to_value(&seeded.rule).unwrap_or(Value::Null);
            definitions.push(("rule", seeded.id, body));
        }
    }
    for tenant in population.tenants() {
        for (kind, key, body) in &definitions {
            sqlx::query(
                "WITH version AS ( \
                   INSERT INTO definition_versions (tenant_id, kind, key, version, body, \
                     created_by, published_at, published_by) \
                   VALUES ($1, $2, $3, 1, $4, $5, now(), $5) \
                   ON CONFLICT DO NOTHING RETURNING tenant_id, kind, key) \
                 INSERT INTO definition_keys (tenant_id, kind, key, latest_version, \
                   published_version) \
                 SELECT tenant_id, kind, key, 1, 1 FROM version ON CONFLICT DO NOTHING",
            )
            .bind(tenant.id)
            .bind(kind)
            .bind(key)
            .bind(body)
            .bind(DEFINED_BY)
            .execute(&mut *connection)
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(n: u128) -> Uuid {
        Uuid::from_u128(0x0193_0000_0000_7000_8000_0000_0000_0000 | n)
    }

    const CONTEXT: &str =
        r#"{"subjectRef":"cus_2a","journey":"payout","channel":"web","locale":"en-GB"}"#;

    #[test]
    fn the_data_is_the_context_with_signals_drawn_from_the_run() {
        let seen = data(run(1), CONTEXT);
        assert_eq!(seen["journey"], "payout");
        assert!(seen["signals"]["kycScore"].is_number());
        assert_eq!(
            data(run(1), CONTEXT),
            seen,
            "the same run sees the same data"
        );
        assert_ne!(data(run(2), CONTEXT)["signals"], seen["signals"]);
    }

    #[test]
    fn each_recorded_outcome_is_the_engines_over_the_data() {
        let book = RuleBook::new();
        assert_eq!(
            (book.screening.rules.len(), book.risk_checks.rules.len()),
            (6, 20)
        );
        let mut decisions = [0; 3];
        let mut ids = std::collections::HashSet::new();
        for n in 0..500 {
            let seen = data(run(n), CONTEXT);
            let evaluation = book
                .risk_checks
                .evaluate(run(n), 1_700_000_000_000_000, &seen);
            let rules = evaluation.rules.as_array().expect("rules");
            assert_eq!(rules.len(), 20);
            assert_eq!(evaluation.rule_keys.len(), 10, "the named ones");
            for (seeded, recorded) in book.risk_checks.rules.iter().zip(rules) {
                let Rule::Field(field) = &seeded.rule else {
                    panic!("field rules only");
                };
                let outcome = rules::decide(&seen, &field.path, &field.fail_when);
                assert_eq!(recorded["outcome"], json!(outcome), "{}", seeded.id);
                assert_eq!(recorded["key"].is_string(), seeded.named);
            }
            decisions[evaluation.decision as usize] += 1;
            assert!(
                ids.insert(evaluation.id),
                "runs of one millisecond get distinct ids"
            );
            assert_eq!(
                book.risk_checks
                    .evaluate(run(n), 1_700_000_000_000_000, &seen)
                    .id,
                evaluation.id
            );
        }
        // Both decisions occur: a backtest has hits and misses to move.
        assert!(decisions[0] > 0 && decisions[1] > 0, "{decisions:?}");
    }
}
