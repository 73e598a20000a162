//! A backtest's summary (SPEC §2.7), tallied one replayed evaluation at a time:
//! - `evaluated`: evaluations replayed (runs, for a workflow);
//! - `outcomes`: the version's rule outcomes, `skipped` for app rules;
//! - `wouldChange`: how many decisions the version changes, by `"<recorded>-><version>"`
//!   (`"pass->fail"`); unchanged ones are not counted;
//! - `overlap`: hits (a rule's failing, a set's or workflow's `fail`) as recorded and as
//!   replayed: `both`, `recordedOnly`, `versionOnly`, `neither`;
//! - `decisions`: the version's decisions, by outcome;
//! - `sampleFailures`: the newest [`FAILURES_SHOWN`] evaluations the version hits, with why;
//! - `daily`: per day (UTC) of the recorded evaluation, oldest first: evaluated, recorded hits,
//!   version hits.

use std::collections::BTreeMap;

use topics::backtests::{Day, Outcomes, SampleFailure, Summary};

use super::replay::{Recorded, Replayed, Verdict};

/// Sample failures a summary shows.
pub(crate) const FAILURES_SHOWN: usize = 20;

#[derive(Debug, Default)]
pub(crate) struct Tally {
    evaluated: i64,
    outcomes: Outcomes,
    would_change: BTreeMap<String, i64>,
    overlap: BTreeMap<String, i64>,
    decisions: BTreeMap<String, i64>,
    failures: Vec<SampleFailure>,
    daily: BTreeMap<String, Day>,
}

impl Tally {
    pub(crate) fn add(&mut self, recorded: &Recorded, replayed: &Replayed) {
        self.evaluated += 1;
        for outcome in &replayed.outcomes {
            *match outcome {
                Verdict::Pass => &mut self.outcomes.pass,
                Verdict::Fail => &mut self.outcomes.fail,
                Verdict::Error => &mut self.outcomes.error,
                Verdict::Skipped => &mut self.outcomes.skipped,
            } += 1;
        }
        if replayed.decision != recorded.decision {
            let change = format!(
                "{}->{}",
                recorded.decision.as_str(),
                replayed.decision.as_str()
            );
            *self.would_change.entry(change).or_default() += 1;
        }
        let overlap = match (replayed.recorded_hit, replayed.hit) {
            (true, true) => "both",
            (true, false) => "recordedOnly",
            (false, true) => "versionOnly",
            (false, false) => "neither",
        };
        *self.overlap.entry(overlap.to_owned()).or_default() += 1;
        *self
            .decisions
            .entry(replayed.decision.as_str().to_owned())
            .or_default() += 1;
        if replayed.hit && self.failures.len() < FAILURES_SHOWN {
            self.failures.push(SampleFailure {
                evaluation_id: recorded.id,
                subject_id: recorded.subject_id,
                evaluated_at: recorded.evaluated_at,
                reasons: replayed.reasons.clone(),
            });
        }
        let day = recorded.evaluated_at.format("%Y-%m-%d").to_string();
        let entry = self.daily.entry(day.clone()).or_insert_with(|| Day {
            day,
            evaluated: 0,
            recorded_hits: 0,
            version_hits: 0,
        });
        entry.evaluated += 1;
        entry.recorded_hits += i64::from(replayed.recorded_hit);
        entry.version_hits += i64::from(replayed.hit);
    }

    pub(crate) fn finish(self, duration_ms: f64) -> Summary {
        Summary {
            evaluated: self.evaluated,
            outcomes: self.outcomes,
            would_change: self.would_change,
            overlap: self.overlap,
            decisions: self.decisions,
            sample_failures: self.failures,
            daily: self.daily.into_values().collect(),
            duration_ms,
        }
    }
}
