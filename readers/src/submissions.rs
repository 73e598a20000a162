//! Collection submissions (docs/hand-off.md): a submission bound to a run, as the applicant
//! routes read it.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::{Error, Tenant};

/// One submission and where its run stands.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Submission {
    pub id: Uuid,
    pub workflow_run_id: Uuid,
    /// The run's status (SPEC §3.6).
    pub run_status: String,
    pub created_at: DateTime<Utc>,
}

pub async fn get(pool: &PgPool, tenant: Tenant, id: Uuid) -> Result<Option<Submission>, Error> {
    Ok(sqlx::query_as(
        "SELECT c.id, c.workflow_run_id, r.status AS run_status, c.created_at \
         FROM collection_submissions c JOIN workflow_runs r ON r.id = c.workflow_run_id \
         WHERE c.tenant_id = $1 AND c.id = $2",
    )
    .bind(tenant.id())
    .bind(id)
    .fetch_optional(pool)
    .await?)
}
