//! The session a run's applicant continues with the vendor (SPEC §4.9): a pending session of
//! the run whose version handles hand-off (`handles.handoff`), with what calling its module's
//! `handoff` export takes.

use sqlx::PgPool;
use uuid::Uuid;

use super::webhook::Target;
use crate::{Error, Tenant};

/// The newest pending hand-off session of the tenant's run `run_id`, if one waits.
pub async fn waiting(pool: &PgPool, tenant: Tenant, run_id: Uuid) -> Result<Option<Target>, Error> {
    Ok(sqlx::query_as(
        "SELECT s.id AS session_id, s.tenant_id, s.app_name, s.action, s.external_id, s.status, \
         s.version_id, v.version, v.sha256, v.manifest, i.tenant_id IS NOT NULL AS installed, \
         i.config, i.approved_hosts \
         FROM app_callback_sessions s JOIN app_versions v ON v.id = s.version_id \
         LEFT JOIN app_installs i ON i.tenant_id = s.tenant_id AND i.app_name = s.app_name \
         WHERE s.tenant_id = $1 AND s.workflow_run_id = $2 AND s.status = 'pending' \
           AND jsonb_typeof(v.manifest -> 'handles' -> 'handoff') = 'string' \
         ORDER BY s.created_at DESC LIMIT 1",
    )
    .bind(tenant.id())
    .bind(run_id)
    .fetch_optional(pool)
    .await?)
}
