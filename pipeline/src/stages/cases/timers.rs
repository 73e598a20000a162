//! The cases' SLA deadlines (`case_timers`): a deadline that comes due is relayed
//! ([`crate::timers`]) as a `BreachSla` of its case; the stage records the breach once, and
//! only if the case is still open.

use topics::cases::{BreachSla, CasesCommand};
use uuid::Uuid;

/// The `case_timers` table.
#[derive(Debug)]
pub(crate) struct CaseTimers;

impl crate::timers::Timers for CaseTimers {
    type Command = CasesCommand;
    const ACTOR: &'static str = "case-sla";
    const NEXT_DUE: &'static str = "SELECT (extract(epoch FROM min(due_at)) - extract(epoch FROM now()))::float8 FROM case_timers";
    const DUE: &'static str = "SELECT case_id, tenant_id, case_id, NULL::text FROM case_timers \
        WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED";
    const SPENT: &'static str = "DELETE FROM case_timers WHERE case_id = ANY($1)";

    fn command(case_id: Uuid) -> CasesCommand {
        CasesCommand::from(BreachSla { case_id })
    }
}
