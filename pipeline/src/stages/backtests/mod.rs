//! The backtests stage (README "Backtests"): one writer per backtest (`backtests.commands`).
//! [`start`] records a requested backtest `queued`, once; then, after the commit, the stage
//! runs it ([`crate::backtests`]) before the command's offset is stored. A worker killed
//! mid-way has its command redelivered to the partition's next consumer, whose after-commit
//! step (a redelivery's too) finds the backtest unfinished and runs it again, once the dead
//! worker's lease expired.

mod start;

use std::time::Duration;

use async_trait::async_trait;
use readers::backtests::Backtest;
use sqlx::{PgPool, Postgres, Transaction};
use topics::Envelope;
use topics::backtests::Command;

use crate::Error;
use crate::stage::{Applied, Stage, tenant_of};

/// Applies [`Command`]s of the `backtests.commands` topic, then runs each backtest.
#[derive(Debug, Clone)]
pub struct BacktestsStage {
    pool: PgPool,
    /// A pause after every [`crate::backtests::PACED_ROWS`] replayed evaluations
    /// (`BACKTEST_PACE_MS`), leaving the cores to the other stages on a small machine.
    pace: Duration,
}

impl BacktestsStage {
    pub fn new(pool: PgPool, pace: Duration) -> Self {
        Self { pool, pace }
    }
}

#[async_trait]
impl Stage for BacktestsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "backtests";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Backtest>, Error> {
        let tenant = readers::Tenant::new(tenant_of::<Self>(command)?);
        match &command.body {
            Command::Start {
                backtest_id,
                target,
                sample,
            } => Ok(
                start::apply(tx, command, tenant, *backtest_id, (target, *sample))
                    .await?
                    .into(),
            ),
        }
    }

    /// Runs the backtest unless it is finished (or was refused): after its `Start` applied,
    /// and again after a redelivery, which reads only what is stored.
    async fn after_commit(
        &self,
        command: &Envelope<Command>,
        _then: Option<()>,
    ) -> Result<(), Error> {
        let id = command.body.backtest_id();
        crate::backtests::run(&self.pool, id, self.pace).await
    }
}
