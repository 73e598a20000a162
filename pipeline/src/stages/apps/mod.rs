//! The apps stage: every transition of an app version (SPEC §3.1), one file per command family
//! — [`upload`], [`publish`], [`decide`] (approve, reject), [`withdraw`], [`platform`] (the
//! release's catalogue) — and the tenant's [`approval_settings`] and
//! [`audit_export_schedule`]. Each applies inside the
//! stage's transaction with its audit rows; a wrong-state call is a `conflict` refusal.

mod approval_settings;
mod audit_export_schedule;
mod decide;
mod platform;
mod publish;
mod upload;
mod version_row;
mod withdraw;

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, Command};
use topics::{Envelope, Outcome};

use crate::Error;
use crate::stage::{Applied, Stage, tenant_of};

pub(crate) use decide::Decision;

/// Applies [`Command`]s of the `apps.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct AppsStage;

#[async_trait]
impl Stage for AppsStage {
    type Body = Command;
    type Then = ();
    const NAME: &'static str = "apps";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Applied<Answer>, Error> {
        self.outcome(tx, command).await.map(Applied::from)
    }
}

impl AppsStage {
    /// What applying `command` comes to.
    async fn outcome(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Outcome<Answer>, Error> {
        match &command.body {
            Command::Upload {
                version_id,
                name,
                version,
                module,
            } => {
                let tenant = tenant_of::<Self>(command)?;
                upload::apply(tx, command, tenant, *version_id, name, version, module).await
            }
            Command::Publish { version_id, name } => {
                publish::apply(tx, command, tenant_of::<Self>(command)?, *version_id, name).await
            }
            Command::Approve {
                version_id,
                name,
                comment,
            } => {
                let tenant = tenant_of::<Self>(command)?;
                let decision = Decision::Approved;
                decide::apply(tx, command, tenant, *version_id, name, decision, comment).await
            }
            Command::Reject {
                version_id,
                name,
                comment,
            } => {
                let tenant = tenant_of::<Self>(command)?;
                let decision = Decision::Rejected;
                decide::apply(tx, command, tenant, *version_id, name, decision, comment).await
            }
            Command::Withdraw {
                version_id,
                name,
                seen,
            } => {
                withdraw::apply(
                    tx,
                    command,
                    tenant_of::<Self>(command)?,
                    *version_id,
                    name,
                    *seen,
                )
                .await
            }
            Command::ReleasePlatform {
                version_id,
                name,
                version,
                module,
            } => platform::release(tx, command, *version_id, name, version, module).await,
            Command::RetirePlatform { version_id, name } => {
                platform::retire(tx, command, *version_id, name).await
            }
            Command::SetApprovalSettings(settings) => {
                approval_settings::apply(tx, command, tenant_of::<Self>(command)?, settings).await
            }
            Command::SetAuditExportSchedule(schedule) => {
                let tenant = tenant_of::<Self>(command)?;
                audit_export_schedule::apply(tx, command, tenant, schedule).await
            }
        }
    }
}
