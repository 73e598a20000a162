//! The definitions stage: versions of workflows, rules, rule sets and collection flows, one
//! writer per key — [`create_version`] numbers the key's next version, [`publish`] makes one
//! version the key's published one after the [`checks`] of what it calls, or opens an approval
//! request that [`decide`] approves, rejects or withdraws and [`comment`] discusses.

mod checks;
mod comment;
mod create_version;
mod decide;
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
            Command::Publish {
                kind,
                key,
                version,
                comment,
            } => {
                let about = (tenant, *kind, key.as_str());
                publish::apply(tx, command, about, *version, comment.as_deref()).await
            }
            Command::Decide {
                kind,
                key,
                approval,
                decision,
                comment,
            } => {
                let deciding = decide::Deciding {
                    tenant,
                    kind: *kind,
                    key,
                    approval: *approval,
                };
                decide::apply(tx, command, deciding, *decision, comment.as_deref()).await
            }
            Command::Comment {
                kind,
                key,
                approval,
                body,
            } => {
                let about = decide::Deciding {
                    tenant,
                    kind: *kind,
                    key,
                    approval: *approval,
                };
                comment::apply(tx, command, about, body).await
            }
        }
    }
}
