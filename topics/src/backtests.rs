//! Commands of a backtest (docs/definitions-and-runs.md "Backtests"), on [`catalogue::BACKTESTS`],
//! keyed by backtest: `Start` records it `queued`, once; a pipeline worker then runs it under a
//! lease.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;

/// What a backtest replays: a version of a rule, a rule set or a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Rule { key: String, version: i32 },
    RuleSet { key: String, version: i32 },
    Workflow { key: String, version: i32 },
}

impl Target {
    /// The target of definition kind `kind` (`rule`, `rule_set`, `workflow`), if it is one.
    pub fn of(kind: &str, key: String, version: i32) -> Option<Self> {
        match kind {
            "rule" => Some(Target::Rule { key, version }),
            "rule_set" => Some(Target::RuleSet { key, version }),
            "workflow" => Some(Target::Workflow { key, version }),
            _ => None,
        }
    }

    /// The definition kind, as definitions name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Rule { .. } => "rule",
            Target::RuleSet { .. } => "rule_set",
            Target::Workflow { .. } => "workflow",
        }
    }

    pub fn key(&self) -> &str {
        match self {
            Target::Rule { key, .. }
            | Target::RuleSet { key, .. }
            | Target::Workflow { key, .. } => key,
        }
    }

    pub fn version(&self) -> i32 {
        match self {
            Target::Rule { version, .. }
            | Target::RuleSet { version, .. }
            | Target::Workflow { version, .. } => *version,
        }
    }
}

labels! {
    /// Where a backtest stands.
    pub enum BacktestStatus {
        Queued = "queued",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
    }
}

/// A backtest as SPEC §2.7 shows it, plus `ruleSetVersion`, `requestedByName`, `startedAt`
/// and `attempts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backtest {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub rule_key: Option<String>,
    pub rule_version: Option<i32>,
    pub rule_set_key: Option<String>,
    pub rule_set_version: Option<i32>,
    pub workflow_key: Option<String>,
    pub workflow_version: Option<i32>,
    pub sample: Sample,
    pub status: BacktestStatus,
    pub progress: Progress,
    pub summary: Option<Summary>,
    pub error: Option<String>,
    pub engine_workflow_id: Option<String>,
    pub requested_by: String,
    pub requested_by_name: String,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// How many times a worker started it (more than one after a worker died mid-way).
    pub attempts: i32,
}

/// Which recorded evaluations it replays: the newest `limit` of the last `last_days` days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub last_days: i32,
    pub limit: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub done: i32,
    pub total: i32,
}

/// What a completed backtest found (SPEC §2.7's summary; docs/definitions-and-runs.md "Backtests"
/// says what each count counts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub evaluated: i64,
    pub outcomes: Outcomes,
    pub would_change: BTreeMap<String, i64>,
    pub overlap: BTreeMap<String, i64>,
    pub decisions: BTreeMap<String, i64>,
    pub sample_failures: Vec<SampleFailure>,
    pub daily: Vec<Day>,
    pub duration_ms: f64,
}

/// Rule outcomes of the version over the sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    pub pass: i64,
    pub fail: i64,
    pub error: i64,
    pub skipped: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleFailure {
    pub evaluation_id: Uuid,
    pub subject_id: Option<Uuid>,
    pub evaluated_at: DateTime<Utc>,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    pub evaluated: i64,
    pub recorded_hits: i64,
    pub version_hits: i64,
}

topic_commands! {
    /// The commands of a backtest.
    pub enum BacktestsCommand on catalogue::BACKTESTS, version 1, replies 1,
        keyed |command, _tenant| catalogue::id_key(command.backtest_id);
    {
        Start => Backtest,
    }
}

/// Records backtest `backtest_id` as `queued` (`POST /backtests`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub backtest_id: Uuid,
    pub target: Target,
    pub sample: Sample,
}
