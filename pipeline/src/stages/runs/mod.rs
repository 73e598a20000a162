//! The runs stage: workflow runs (README "Definitions and runs"), one writer per run (commands
//! keyed by run id on `runs.commands`).
//!
//! A command applies like any stage's ([`Stage`]: inbox, one transaction, reply): [`start`]
//! creates the run, [`cancel`] ends it, [`submission`] opens a collection submission on it,
//! `Resume` (a due timer, relayed by [`timers`]) changes nothing by itself. Then, after the
//! reply, the run goes as far as it can ([`advance`]): its steps ([`steps`]) make app calls
//! ([`call`]: [`target`] the install, [`attempt`] one runner call outside any transaction,
//! [`circuit`] whether it may go out, [`record`] its invocation record, [`retry`] when to try
//! again) with inputs built by [`input_mapping`], and evaluate [`rules`]. A delay (a retry's, a
//! callback's deadline) is a run timer, never a sleeping task.
//!
//! The run's progress is only ever read from what is stored, so a redelivered command, a
//! timer firing twice or a restart mid-call takes the run on from where it stands.

mod advance;
mod attempt;
mod call;
mod cancel;
mod circuit;
mod input_mapping;
mod record;
mod retry;
mod rules;
mod start;
mod steps;
mod submission;
mod target;
pub(crate) mod timers;

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::runs::Command;
use topics::{Delivery, Envelope, HandleError, Handler, Outcome};

pub(crate) use self::call::Calls;
pub(crate) use self::record::UNINSTALLED;
use crate::Error;
use crate::replies::Replies;
use crate::stage::{Stage, StageHandler, tenant_of};

/// Applies [`Command`]s of the `runs.commands` topic.
#[derive(Debug, Default)]
pub(crate) struct RunsStage;

#[async_trait]
impl Stage for RunsStage {
    type Body = Command;
    const NAME: &'static str = "runs";

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        command: &Envelope<Command>,
    ) -> Result<Outcome, Error> {
        let tenant = tenant_of::<Self>(command)?;
        match &command.body {
            Command::Start {
                run_id,
                definition_key,
                version,
                subject_id,
                context,
            } => {
                let start = start::Start {
                    run_id: *run_id,
                    definition_key,
                    version: *version,
                    subject_id: *subject_id,
                    context,
                };
                start::apply(tx, command, tenant, start).await
            }
            Command::Cancel { run_id } => cancel::apply(tx, tenant, *run_id).await,
            Command::Resume { .. } => Ok(Outcome::done(serde_json::Value::Null)),
            Command::OpenSubmission {
                run_id,
                submission_id,
            } => submission::open(tx, command, tenant, *run_id, *submission_id).await,
        }
    }
}

/// The runs stage's consumer handler: the command applied and answered, then the run advanced.
pub(crate) struct RunsHandler {
    stage: StageHandler<RunsStage>,
    calls: Calls,
}

impl std::fmt::Debug for RunsHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsHandler").finish_non_exhaustive()
    }
}

impl RunsHandler {
    pub(crate) fn new(calls: Calls, replies: Option<Replies>) -> Self {
        Self {
            stage: StageHandler::new(RunsStage, calls.pool.clone(), replies),
            calls,
        }
    }
}

#[async_trait]
impl Handler for RunsHandler {
    async fn handle(&self, delivery: &Delivery<'_>) -> Result<(), HandleError> {
        self.stage.handle(delivery).await?;
        let command = Envelope::<Command>::decode(delivery.payload)
            .map_err(|e| Error::Undecodable(e.to_string()).into_handle_error())?;
        let tenant = tenant_of::<RunsStage>(&command).map_err(Error::into_handle_error)?;
        advance::run(
            &self.calls,
            tenant,
            command.body.run_id(),
            &command.request_id,
        )
        .await
        .map_err(Error::into_handle_error)
    }

    async fn dead_lettered(
        &self,
        delivery: &Delivery<'_>,
        reason: &str,
    ) -> Result<(), HandleError> {
        self.stage.dead_lettered(delivery, reason).await
    }
}

/// `svc.workflow.run.duration` of a run that ended.
fn observe_finished(tenant: uuid::Uuid, definition_key: &str, status: &str, seconds: f64) {
    metrics::histogram!(
        "svc.workflow.run.duration",
        "tenant" => tenant.to_string(),
        "definition_key" => definition_key.to_owned(),
        "status" => status.to_owned(),
    )
    .record(seconds);
    tracing::info!(status, seconds, "run ended");
}
