//! `OpenSubmission`: a collection submission bound to the run (docs/hand-off.md), the handle
//! an applicant's token names. A run that does not exist (or is another tenant's) is 404.

use topics::runs::{OpenSubmission, Submission};
use topics::{Outcome, RefusalCode};

use super::RunsStage;
use crate::Error;
use crate::stage::{Context, applies};

applies!(RunsStage: OpenSubmission => open);

async fn open(cx: &mut Context, command: &OpenSubmission) -> Result<Outcome<Submission>, Error> {
    let tenant = cx.tenant()?;
    let OpenSubmission {
        run_id,
        submission_id,
    } = *command;
    let opened: Option<(chrono::DateTime<chrono::Utc>,)> = sqlx::query_as(
        "INSERT INTO collection_submissions (id, tenant_id, workflow_run_id, created_by, \
         created_at) \
         SELECT $1, $2, r.id, $4, now() FROM workflow_runs r WHERE r.id = $3 AND r.tenant_id = $2 \
         RETURNING created_at",
    )
    .bind(submission_id)
    .bind(tenant)
    .bind(run_id)
    .bind(&cx.command.principal.id)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let Some((created_at,)) = opened else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such run."));
    };
    Ok(Outcome::done(Submission {
        id: submission_id,
        workflow_run_id: run_id,
        created_by: cx.command.principal.id.clone(),
        created_at,
    }))
}
