//! The cases stage (docs/cases-activity-audit.md "Cases"): one writer per case (`cases.commands`).
//! [`open`] records a case `POST /cases` opened (a workflow's `open_case` step inserts its own, in
//! the run's transaction) with its SLA timer; [`decide`] decides an open case once (audit
//! `case.decided`); [`breach`] records an open case's deadline passing once (audit
//! `case.sla.breached`), when the [`timers`] relay fires it.

mod breach;
mod decide;
mod open;
pub(crate) mod timers;

use async_trait::async_trait;
use sqlx::{Postgres, Transaction};
use topics::cases::Case;
use topics::cases::CasesCommand;
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use crate::Error;
use crate::stage::Stage;
use crate::timers::TimerTable;

/// Applies the commands of the `cases.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct CasesStage;

/// A case decided: what `svc.case.time_to_decision` and `svc.decision.count` record once the
/// decision commits.
#[derive(Debug)]
pub(crate) struct Decided {
    tenant: Uuid,
    case_type: String,
    seconds: f64,
    outcome: &'static str,
    /// The workflow whose run opened the case; `None` for a case opened by `POST /cases`.
    definition_key: Option<String>,
}

#[async_trait]
impl Stage for CasesStage {
    type Body = CasesCommand;
    type Then = Option<Decided>;
    const NAME: &'static str = "cases";
    /// Sets timers: an opened case's SLA deadline.
    const SETS_TIMERS: &'static [TimerTable] = &[TimerTable::Cases];

    async fn after_commit(
        &self,
        _command: &Envelope<CasesCommand>,
        then: Option<Option<Decided>>,
    ) -> Result<(), Error> {
        if let Some(Some(decided)) = then {
            metrics::histogram!(
                "svc.case.time_to_decision",
                "tenant" => decided.tenant.to_string(),
                "type" => decided.case_type,
            )
            .record(decided.seconds);
            // A reviewer's decision; a rule set's are counted where it is evaluated (`workflow`).
            metrics::counter!(
                "svc.decision.count",
                "tenant" => decided.tenant.to_string(),
                "outcome" => decided.outcome,
                "source" => "case",
                "definition_key" => decided.definition_key.unwrap_or_default(),
            )
            .increment(1);
        }
        Ok(())
    }
}

/// The case as it stands, answered.
async fn answer(
    tx: &mut Transaction<'_, Postgres>,
    tenant: readers::Tenant,
    case_id: Uuid,
) -> Result<Outcome<Case>, Error> {
    match readers::cases::get(&mut **tx, tenant, case_id).await? {
        Some(case) => Ok(Outcome::done(case)),
        None => Ok(Outcome::refused(RefusalCode::NotFound, "No such case.")),
    }
}
