//! The runs' timers (`run_timers`): a retry's delay or a callback's deadline that comes due is
//! relayed ([`crate::timers`]) as a `Resume` of its run; a second `Resume` finds nothing to do.

use topics::runs::{Resume, RunsCommand};
use uuid::Uuid;

/// The `run_timers` table.
#[derive(Debug)]
pub(crate) struct RunTimers;

impl crate::timers::Timers for RunTimers {
    type Command = RunsCommand;
    const ACTOR: &'static str = "run-timers";
    const NEXT_DUE: &'static str = "SELECT (extract(epoch FROM min(due_at)) - extract(epoch FROM now()))::float8 FROM run_timers";
    const DUE: &'static str = "SELECT id, tenant_id, run_id, traceparent FROM run_timers \
        WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED";
    const SPENT: &'static str = "DELETE FROM run_timers WHERE id = ANY($1)";

    fn command(run_id: Uuid) -> RunsCommand {
        RunsCommand::from(Resume { run_id })
    }
}
