//! `Approve` and `Reject`: decide a version's open publish request (SPEC §3.1). Approving
//! publishes; with four-eyes on, the requester approving is refused `four_eyes` (decided, and
//! the decision written, as for every request: [`approvals`]). Rejecting leaves the version
//! `uploaded`, so it can be requested again.

use async_trait::async_trait;
use serde_json::json;
use topics::apps::{Approve, Reject, Version, VersionStatus};
use topics::definitions::Decision;
use topics::{Applied, Apply, Outcome, RefusalCode};
use uuid::Uuid;

use super::AppsStage;
use super::version_row::{self, Audited};
use crate::Error;
use crate::stage::Context;
use crate::stages::approvals::{self, Requests};

#[async_trait]
impl Apply<Approve, Context> for AppsStage {
    async fn apply(&self, cx: &mut Context, approve: &Approve) -> Result<Applied<Version>, Error> {
        let Approve {
            version_id,
            name,
            comment,
        } = approve;
        decide(cx, *version_id, name, Decision::Approved, comment)
            .await
            .map(Applied::from)
    }
}

#[async_trait]
impl Apply<Reject, Context> for AppsStage {
    async fn apply(&self, cx: &mut Context, reject: &Reject) -> Result<Applied<Version>, Error> {
        let Reject {
            version_id,
            name,
            comment,
        } = reject;
        decide(cx, *version_id, name, Decision::Rejected, comment)
            .await
            .map(Applied::from)
    }
}

async fn decide(
    cx: &mut Context,
    version_id: Uuid,
    name: &str,
    decision: Decision,
    comment: &Option<String>,
) -> Result<Outcome<Version>, Error> {
    let tenant = cx.tenant()?;
    let Some(row) = version_row::lock(&mut cx.tx, Some(tenant), name, version_id).await? else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    let open: Option<(Uuid, String)> = sqlx::query_as(
        "SELECT id, requested_by FROM app_approval_requests \
         WHERE version_id = $1 AND decision IS NULL FOR UPDATE",
    )
    .bind(version_id)
    .fetch_optional(&mut *cx.tx)
    .await?;
    let Some((request_id, requested_by)) = open.filter(|_| row.status == VersionStatus::Uploaded)
    else {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            "The version has no open publish request.",
        ));
    };
    if decision == Decision::Approved {
        let tenant = readers::Tenant::new(tenant);
        if let Some(refused) = approvals::four_eyes(cx, tenant, &requested_by).await? {
            return Ok(refused);
        }
    }
    let comment = comment.as_deref();
    approvals::record(cx, Requests::AppVersions, request_id, decision, comment).await?;
    let audited = Audited {
        name,
        version: &row.version,
        id: version_id,
    };
    let extra = json!({ "requestId": request_id, "decision": decision.as_str() });
    version_row::record(cx, "app.approval.decided", audited, extra);
    if decision == Decision::Approved {
        version_row::set_status(&mut cx.tx, version_id, VersionStatus::Published).await?;
        version_row::record(cx, "app.published", audited, json!({}));
    }
    version_row::answer(&mut cx.tx, Some(tenant), name, version_id).await
}
