//! `OpenSubmission`: a collection submission bound to the run (README "Hand-off"), the handle
//! an applicant's token names. A run that does not exist (or is another tenant's) is 404.

use sqlx::{Postgres, Transaction};
use topics::runs::{Answer, Command, Submission};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use crate::Error;

pub(super) async fn open(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    run_id: Uuid,
    submission_id: Uuid,
) -> Result<Outcome<Answer>, Error> {
    let opened: Option<(chrono::DateTime<chrono::Utc>,)> = sqlx::query_as(
        "INSERT INTO collection_submissions (id, tenant_id, workflow_run_id, created_by, \
         created_at) \
         SELECT $1, $2, r.id, $4, now() FROM workflow_runs r WHERE r.id = $3 AND r.tenant_id = $2 \
         RETURNING created_at",
    )
    .bind(submission_id)
    .bind(tenant)
    .bind(run_id)
    .bind(&command.principal.id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((created_at,)) = opened else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such run."));
    };
    Ok(Outcome::done(Answer::Submission(Submission {
        id: submission_id,
        workflow_run_id: run_id,
        created_by: command.principal.id.clone(),
        created_at,
    })))
}
