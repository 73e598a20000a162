//! `Cancel`: a run that has not ended becomes `cancelled` with its current step; its calls
//! stop (a pending callback session fails with `run_cancelled`: first wins, so a callback
//! arriving later is stale) and its timers go. A run that ended answers 409 `conflict`.

use topics::runs::{Cancel, Run};
use topics::{Outcome, RefusalCode};

use super::RunsStage;
use crate::Error;
use crate::stage::{Context, applies};

applies!(RunsStage: Cancel => apply);

async fn apply(cx: &mut Context, cancel: &Cancel) -> Result<Outcome<Run>, Error> {
    let tenant = cx.tenant()?;
    let run_id = cancel.run_id;
    // NO KEY UPDATE: a stage settling one of the run's sessions inserts the run's timer, whose
    // foreign key takes KEY SHARE on this row while holding the session; FOR UPDATE would wait
    // on it while it waits on our session update (a deadlock).
    let status: Option<(String, String, f64)> = sqlx::query_as(
        "SELECT status, definition_key, extract(epoch FROM now() - created_at)::float8 \
         FROM workflow_runs WHERE id = $1 AND tenant_id = $2 FOR NO KEY UPDATE",
    )
    .bind(run_id)
    .bind(tenant)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let Some((status, definition_key, seconds)) = status else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such run."));
    };
    if !matches!(status.as_str(), "running" | "waiting_callback") {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("The run has ended ({status})."),
        ));
    }
    let statements = [
        "UPDATE workflow_runs SET status = 'cancelled', updated_at = now(), finished_at = now() \
         WHERE id = $1",
        "UPDATE workflow_run_steps SET status = 'cancelled', finished_at = now() \
         WHERE run_id = $1 AND status IN ('running', 'waiting_callback')",
        // Sessions locked in id order first, as the callbacks stage locks a batch's.
        "WITH locked AS ( \
           SELECT id FROM app_callback_sessions \
           WHERE id IN (SELECT session_id FROM workflow_run_calls \
                        WHERE run_id = $1 AND status = 'pending') AND status = 'pending' \
           ORDER BY id FOR UPDATE) \
         UPDATE app_callback_sessions SET status = 'failed', error = 'run_cancelled', \
         completed_at = now() WHERE id IN (SELECT id FROM locked) AND status = 'pending'",
        "UPDATE workflow_run_calls SET status = 'cancelled' \
         WHERE run_id = $1 AND status IN ('running', 'pending')",
        "DELETE FROM run_timers WHERE run_id = $1",
    ];
    for statement in statements {
        sqlx::query(statement)
            .bind(run_id)
            .execute(&mut *cx.tx)
            .await?;
    }
    let run = readers::runs::get(&mut cx.tx, readers::Tenant::new(tenant), run_id)
        .await?
        .ok_or_else(|| Error::Invalid("the run just written is not there".into()))?;
    // Before the commit: a cancel whose commit fails is applied (and counted) again on
    // redelivery, a rare double count; after it, a crash would miss the run instead.
    super::observe_finished(tenant, &definition_key, "cancelled", seconds);
    Ok(Outcome::done(run))
}
