//! The session a run's applicant continues with the vendor (SPEC §4.9): a pending session of
//! the run whose version handles hand-off (`handles.handoff`), with what calling its module's
//! `handoff` export takes.

use sqlx::PgPool;
use uuid::Uuid;

use super::target::{Target, install_joins, target_columns};
use crate::{Error, Tenant};

/// The newest pending hand-off session of the tenant's run `run_id`, if one waits.
pub async fn waiting(pool: &PgPool, tenant: Tenant, run_id: Uuid) -> Result<Option<Target>, Error> {
    Ok(sqlx::query_as(concat!(
        "SELECT ",
        target_columns!(),
        "FROM app_callback_sessions s JOIN app_versions v ON v.id = s.version_id",
        install_joins!(),
        "WHERE s.tenant_id = $1 AND s.workflow_run_id = $2 AND s.status = 'pending' \
           AND jsonb_typeof(v.manifest -> 'handles' -> 'handoff') = 'string' \
         ORDER BY s.created_at DESC LIMIT 1",
    ))
    .bind(tenant.id())
    .bind(run_id)
    .fetch_optional(pool)
    .await?)
}
