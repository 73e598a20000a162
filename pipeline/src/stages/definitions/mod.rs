//! The definitions stage: versions of workflows, rules, rule sets and collection flows, one
//! writer per key — [`create_version`] numbers the key's next version, [`publish`] makes one
//! version the key's published one after the [`checks`] of what it calls.

mod checks;
mod create_version;
mod publish;

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::definitions::{Answer, Command};
use topics::{Envelope, Outcome};

use crate::Error;
use crate::stage::{Applied, Stage, tenant_of};

/// Applies [`Command`]s of the `definitions.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct DefinitionsStage;

#[async_trait]
impl Stage for DefinitionsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "definitions";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Answer>, Error> {
        self.outcome(tx, command).await.map(Applied::from)
    }
}

impl DefinitionsStage {
    /// What applying `command` comes to.
    async fn outcome(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Outcome<Answer>, Error> {
        let tenant = tenant_of::<Self>(command)?;
        let tenant = readers::Tenant::new(tenant);
        match &command.body {
            Command::CreateVersion { kind, key, body } => {
                create_version::apply(tx, command, tenant, *kind, key, body).await
            }
            Command::Publish { kind, key, version } => {
                publish::apply(tx, command, tenant, *kind, key, *version).await
            }
        }
    }
}
