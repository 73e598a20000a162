//! Commands of a backtest (README "Backtests"), on [`catalogue::BACKTESTS`], keyed by
//! backtest: `Start` records it `queued`, once; a pipeline worker then runs it under a lease.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::command::topic_commands;
use crate::{Command, catalogue};

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

/// Which recorded evaluations it replays: the newest `limit` of the last `last_days` days, as
/// the backtest shows it.
pub use readers::backtests::Sample;

topic_commands! {
    /// The commands of a backtest.
    pub enum BacktestsCommand on catalogue::BACKTESTS, version 1, replies 1 {
        Start,
    }
}

/// Records backtest `backtest_id` as `queued` (`POST /backtests`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub backtest_id: Uuid,
    pub target: Target,
    pub sample: Sample,
}

impl Command for Start {
    type Body = BacktestsCommand;
    /// The backtest as recorded.
    type Reply = readers::backtests::Backtest;

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::id_key(self.backtest_id)
    }
}
