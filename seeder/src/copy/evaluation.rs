//! A run's rule evaluations (`screening` once its first step is answered, `risk-checks` once
//! it completed; [`crate::evaluation`]) as lines of `COPY rule_evaluations`.

use serde_json::Value;

use super::fields::{copy_line, integer, milliseconds, optional, text, timestamp, uuid};
use crate::evaluation::{Evaluation, RuleBook, RuleSet, data};
use crate::run::{DEFINITION_VERSION, Run, RunStatus};

/// The statement evaluations are sent with; the columns are in the order [`encode`] writes
/// them.
pub(super) const STATEMENT: &str = "COPY rule_evaluations (id, tenant_id, subject_id, run_id, \
     workflow_key, workflow_version, step_id, rule_set_key, rule_set_version, decision, rules, \
     rule_keys, data, duration_ms, evaluated_at) FROM STDIN";

/// Appends the evaluations `run` made to `out`; answers how many.
pub(super) fn encode(book: &RuleBook, run: &Run<'_>, out: &mut Vec<u8>) -> u64 {
    let first_answered = run
        .steps
        .first()
        .filter(|step| step.status == RunStatus::Completed)
        .and_then(|step| step.finished_at);
    let Some(screened_at) = first_answered else {
        return 0;
    };
    let seen = data(run.id, run.context);
    line(run, (&book.screening, screened_at), &seen, out);
    match (run.state.status, run.state.finished_at) {
        (RunStatus::Completed, Some(finished_at)) => {
            line(run, (&book.risk_checks, finished_at), &seen, out);
            2
        }
        _ => 1,
    }
}

fn line(run: &Run<'_>, (set, at): (&RuleSet, i64), seen: &Value, out: &mut Vec<u8>) {
    let Evaluation {
        id,
        decision,
        rules,
        rule_keys,
    } = set.evaluate(run.id, at, seen);
    let duration_ms = 0.05 + (id.as_u64_pair().1 % 400) as f64 / 1000.0;
    copy_line!(out;
        uuid(id),
        uuid(run.tenant_id),
        optional(run.subject_id, uuid),
        uuid(run.id),
        text(run.definition_key),
        integer(i64::from(DEFINITION_VERSION)),
        text(set.key),
        text(set.key),
        integer(1),
        text(decision.as_str()),
        text(&rules.to_string()),
        array(&rule_keys),
        text(&seen.to_string()),
        milliseconds(duration_ms),
        timestamp(at),
    );
}
/// A `text[]` of keys, which need no escapes.
fn array(out: &mut Vec<u8>, keys: &[&str]) {
    out.push(b'{');
    out.extend_from_slice(keys.join(",").as_bytes());
    out.push(b'}');
}
