//! Commands of a backtest (README "Backtests"), on [`catalogue::BACKTESTS`], keyed by
//! backtest: `Start` records it `queued`, once; a pipeline worker then runs it under a lease.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Records backtest `backtest_id` as `queued` (`POST /backtests`).
    Start {
        backtest_id: Uuid,
        target: Target,
        sample: Sample,
    },
}

impl Command {
    pub fn backtest_id(&self) -> Uuid {
        match self {
            Command::Start { backtest_id, .. } => *backtest_id,
        }
    }
}

impl Message for Command {
    const TOPIC: Topic = catalogue::BACKTESTS;
    const VERSION: u16 = 1;
    /// The backtest as recorded.
    type Answer = readers::backtests::Backtest;

    fn key(&self, _tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::id_key(self.backtest_id())
    }
}
