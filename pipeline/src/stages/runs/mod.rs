//! The runs stage: workflow runs (docs/definitions-and-runs.md), one writer per run (commands
//! keyed by run id on `runs.commands`).
//!
//! A command applies like any stage's ([`Stage`]: inbox, one transaction, reply): [`start`]
//! creates the run, [`cancel`] ends it, [`submission`] opens a collection submission on it,
//! [`resume`] (a due timer, relayed by [`timers`]) changes nothing by itself. Then, after the
//! commit and the reply ([`Stage::after_commit`]), the run goes as far as it can ([`advance`]):
//! its steps ([`steps`]) make app calls ([`call`]: [`target`] the install, [`attempt`] one
//! runner call outside any transaction, [`circuit`] whether it may go out, [`record`] its
//! invocation record, [`retry`] when to try again) with inputs built by [`input_mapping`], and
//! evaluate rules ([`rules`](topics::definitions::rules)). A delay (a retry's, a
//! callback's deadline) is a run timer, never a sleeping task.
//!
//! The run's progress is only ever read from what is stored, so a redelivered command, a
//! timer firing twice or a restart mid-call takes the run on from where it stands.

mod advance;
mod attempt;
mod call;
mod cancel;
mod circuit;
mod evaluation;
mod input_mapping;
mod record;
mod resume;
mod retry;
mod rule_set;
mod start;
mod steps;
mod submission;
mod target;
pub(crate) mod timers;

use async_trait::async_trait;
use topics::Envelope;
use topics::runs::RunsCommand;
use uuid::Uuid;

pub(crate) use self::call::Calls;
pub(crate) use self::record::UNINSTALLED;
use crate::Error;
use crate::stage::Stage;
use crate::timers::TimerTable;

/// Applies the commands of the `runs.commands` topic, each type in its file, then takes each
/// run as far as it can.
pub(crate) struct RunsStage {
    calls: Calls,
}

impl std::fmt::Debug for RunsStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsStage").finish_non_exhaustive()
    }
}

#[async_trait]
impl Stage for RunsStage {
    type Body = RunsCommand;
    type Then = ();
    const NAME: &'static str = "runs";
    /// Sets timers: a retry's delay, a callback's deadline; a case's SLA deadline when a step
    /// opens one.
    const SETS_TIMERS: &'static [TimerTable] = &[TimerTable::Runs, TimerTable::Cases];

    /// After the command's commit (or its answer from the inbox), the run goes as far as it
    /// can: its calls go out here, outside any transaction.
    async fn after_commit(
        &self,
        command: &Envelope<RunsCommand>,
        _then: Option<()>,
    ) -> Result<(), Error> {
        // The tenant or poison, as `Context::tenant` when it applied.
        let tenant = command
            .tenant
            .ok_or_else(|| Error::Invalid(format!("a {} command without a tenant", Self::NAME)))?;
        advance::run(
            &self.calls,
            tenant,
            run_of(&command.body),
            &command.request_id,
        )
        .await
    }
}

/// The run a command is of.
fn run_of(command: &RunsCommand) -> Uuid {
    match command {
        RunsCommand::Start(start) => start.run_id,
        RunsCommand::Cancel(cancel) => cancel.run_id,
        RunsCommand::Resume(resume) => resume.run_id,
        RunsCommand::OpenSubmission(open) => open.run_id,
    }
}

impl RunsStage {
    pub(crate) fn new(calls: Calls) -> Self {
        Self { calls }
    }
}

/// `svc.workflow.run.duration` of a run that ended.
fn observe_finished(tenant: Uuid, definition_key: &str, status: &str, seconds: f64) {
    metrics::histogram!(
        "svc.workflow.run.duration",
        "tenant" => tenant.to_string(),
        "definition_key" => definition_key.to_owned(),
        "status" => status.to_owned(),
    )
    .record(seconds);
    tracing::info!(status, seconds, "run ended");
}
