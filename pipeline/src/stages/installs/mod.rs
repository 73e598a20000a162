//! The installs stage: a tenant's install of an app (SPEC §3.4b), one file per command family —
//! [`install`] (install, configure, upgrade, enable, disable), [`uninstall`], [`secrets`]
//! (store, revoke) and [`tested`] (the audit of a test call). The install and its secrets share
//! the key, so "enabled while a secret has no value" is decided against the secrets as they
//! are.
//!
//! Commands queued on a partition apply in one transaction ([`BATCH_LIMIT`]): one begin and one
//! commit (one WAL flush waited on) for the batch instead of one each. Nothing waits for a batch
//! to fill, so a lone install is applied as soon as it is read; a burst, whose commands queue
//! behind the one being applied, is what batches.

mod install;
mod secrets;
mod tested;
mod uninstall;

use sqlx::{Postgres, Transaction};
use topics::installs::{Installed, InstallsCommand};
use uuid::Uuid;

use crate::Error;
use crate::stage::Stage;
use crate::timers::TimerTable;

/// Up to how many queued commands apply in one transaction. Each holds its install's row lock
/// until the batch commits; the commands that could wait on those locks are of the same
/// installs, so of the same partition, and wait behind the batch anyway (one consumer per
/// partition). A batch that fails is applied again one command at a time by the consumer, so
/// one bad command does not hold back the others.
const BATCH_LIMIT: usize = 32;

/// Applies the commands of the `installs.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub struct InstallsStage;

impl Stage for InstallsStage {
    type Body = InstallsCommand;
    type Then = ();
    const NAME: &'static str = "installs";
    const BATCH_LIMIT: usize = BATCH_LIMIT;
    /// Sets timers: an uninstall fails its pending sessions, and their runs resume through
    /// timers due now.
    const SETS_TIMERS: &'static [TimerTable] = &[TimerTable::Runs];
}

/// The install as it now is, for the reply.
async fn answer(
    tx: &mut Transaction<'_, Postgres>,
    tenant: Uuid,
    name: &str,
) -> Result<Option<Installed>, Error> {
    Ok(readers::apps::installs::get(tx, readers::Tenant::new(tenant), name).await?)
}
