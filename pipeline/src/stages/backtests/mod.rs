//! The backtests stage (docs/definitions-and-runs.md "Backtests"): one writer per backtest
//! (`backtests.commands`). [`start`] records a requested backtest `queued`, once, with a lease
//! reserved for this worker; after the commit the worker's [`Runner`] starts it in the background,
//! beside the lane, so the next command of the partition never waits for a backtest. A worker that
//! dies before or while running it leaves a lease that expires, and a sweep (any worker's) starts
//! it again.

mod start;

use async_trait::async_trait;
use topics::Envelope;
use topics::backtests::BacktestsCommand;
use uuid::Uuid;

use crate::Error;
use crate::backtests::Runner;
use crate::stage::Stage;

/// Applies the commands of the `backtests.commands` topic, then starts each backtest.
#[derive(Debug, Clone)]
pub struct BacktestsStage {
    runner: Runner,
}

impl BacktestsStage {
    pub fn new(runner: Runner) -> Self {
        Self { runner }
    }
}

/// A backtest recorded by this worker, and the lease reserved for it.
#[derive(Debug)]
pub struct Recorded {
    id: Uuid,
    lease: Uuid,
}

#[async_trait]
impl Stage for BacktestsStage {
    type Body = BacktestsCommand;
    type Then = Option<Recorded>;
    const NAME: &'static str = "backtests";

    /// Starts what this worker recorded; a redelivery starts nothing (the backtest is
    /// another worker's, or a sweep's once its lease expires).
    async fn after_commit(
        &self,
        _command: &Envelope<BacktestsCommand>,
        then: Option<Option<Recorded>>,
    ) -> Result<(), Error> {
        if let Some(Some(recorded)) = then {
            self.runner.start(recorded.id, recorded.lease);
        }
        Ok(())
    }
}
