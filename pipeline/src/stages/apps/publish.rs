//! `Publish` (SPEC §3.1): an `uploaded` version is published at once, or, when the tenant's
//! approval settings require app approvals, an approval request opens and it stays `uploaded`
//! (the route answers 202). A version with an open request is a `conflict`.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, Command, VersionStatus};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::version_row::{self, Audited};
use crate::Error;

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    version_id: Uuid,
    name: &str,
) -> Result<Outcome<Answer>, Error> {
    let Some(row) = version_row::lock(tx, Some(tenant), name, version_id).await? else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    if row.status != VersionStatus::Uploaded {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!(
                "The version is {}; only an uploaded version can be published.",
                row.status.as_str()
            ),
        ));
    }
    let open: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM app_approval_requests WHERE version_id = $1 AND decision IS NULL",
    )
    .bind(version_id)
    .fetch_optional(&mut **tx)
    .await?;
    if open.is_some() {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            "A publish request of this version is already open.",
        ));
    }
    let settings = readers::approval_settings::get(&mut **tx, readers::Tenant::new(tenant)).await?;
    let audited = Audited {
        name,
        version: &row.version,
        id: version_id,
    };
    if settings.needs_approval("app") {
        let request_id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO app_approval_requests (id, tenant_id, version_id, app_name, requested_by, \
             requested_by_name, requested_at) VALUES ($1, $2, $3, $4, $5, $6, now())",
        )
        .bind(request_id)
        .bind(tenant)
        .bind(version_id)
        .bind(name)
        .bind(&command.principal.id)
        .bind(&command.principal.name)
        .execute(&mut **tx)
        .await?;
        let extra = json!({ "requestId": request_id });
        version_row::record(tx, command, "app.approval.requested", audited, extra).await?;
    } else {
        version_row::set_status(tx, version_id, VersionStatus::Published).await?;
        version_row::record(tx, command, "app.published", audited, json!({})).await?;
    }
    version_row::answer(tx, Some(tenant), name, version_id).await
}
