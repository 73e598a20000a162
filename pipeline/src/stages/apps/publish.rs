//! `Publish` (SPEC §3.1): an `uploaded` version is published at once, or, when the tenant's
//! approval settings require app approvals, an approval request opens and it stays `uploaded`
//! (the route answers 202). A version with an open request is a `conflict`.

use serde_json::json;
use topics::apps::{Publish, Version, VersionStatus};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::AppsStage;
use super::version_row::{self, Audited};
use crate::Error;
use crate::stage::{Context, applies};

applies!(AppsStage: Publish => apply);

async fn apply(cx: &mut Context, publish: &Publish) -> Result<Outcome<Version>, Error> {
    let tenant = cx.tenant()?;
    let Publish { version_id, name } = publish;
    let version_id = *version_id;
    let Some(row) = version_row::lock(&mut cx.tx, Some(tenant), name, version_id).await? else {
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
    .fetch_optional(&mut *cx.tx)
    .await?;
    if open.is_some() {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            "A publish request of this version is already open.",
        ));
    }
    let settings =
        readers::approval_settings::get(&mut *cx.tx, readers::Tenant::new(tenant)).await?;
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
        .bind(&cx.command.principal.id)
        .bind(&cx.command.principal.name)
        .execute(&mut *cx.tx)
        .await?;
        let extra = json!({ "requestId": request_id });
        version_row::record(cx, "app.approval.requested", audited, extra);
    } else {
        version_row::set_status(&mut cx.tx, version_id, VersionStatus::Published).await?;
        version_row::record(cx, "app.published", audited, json!({}));
    }
    version_row::answer(&mut cx.tx, Some(tenant), name, version_id).await
}
