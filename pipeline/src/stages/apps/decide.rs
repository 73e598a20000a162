//! `Approve` and `Reject`: decide a version's open publish request (SPEC §3.1). Approving
//! publishes; with four-eyes on, the requester approving is refused `four_eyes`. Rejecting
//! leaves the version `uploaded`, so it can be requested again.

use serde_json::json;
use sqlx::{Postgres, Transaction};
use topics::apps::{Answer, Command, VersionStatus};
use topics::{Envelope, Outcome, RefusalCode};
use uuid::Uuid;

use super::version_row::{self, Audited};
use crate::Error;

/// How a request is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Approved,
    Rejected,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Rejected => "rejected",
        }
    }
}

pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    command: &Envelope<Command>,
    tenant: Uuid,
    version_id: Uuid,
    name: &str,
    decision: Decision,
    comment: &Option<String>,
) -> Result<Outcome<Answer>, Error> {
    let Some(row) = version_row::lock(tx, Some(tenant), name, version_id).await? else {
        return Ok(Outcome::refused(RefusalCode::NotFound, "No such version."));
    };
    let open: Option<(Uuid, String)> = sqlx::query_as(
        "SELECT id, requested_by FROM app_approval_requests \
         WHERE version_id = $1 AND decision IS NULL FOR UPDATE",
    )
    .bind(version_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((request_id, requested_by)) = open.filter(|_| row.status == VersionStatus::Uploaded)
    else {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            "The version has no open publish request.",
        ));
    };
    if decision == Decision::Approved {
        let settings =
            readers::approval_settings::get(&mut **tx, readers::Tenant::new(tenant)).await?;
        if settings.four_eyes && requested_by == command.principal.id {
            return Ok(Outcome::refused(
                RefusalCode::FourEyes,
                "Four-eyes is on: another administrator must approve your request.",
            ));
        }
    }
    sqlx::query(
        "UPDATE app_approval_requests SET decision = $2, decided_by = $3, decided_by_name = $4, \
         decided_at = now(), decision_comment = $5 WHERE id = $1",
    )
    .bind(request_id)
    .bind(decision.as_str())
    .bind(&command.principal.id)
    .bind(&command.principal.name)
    .bind(comment)
    .execute(&mut **tx)
    .await?;
    let audited = Audited {
        name,
        version: &row.version,
        id: version_id,
    };
    let extra = json!({ "requestId": request_id, "decision": decision.as_str() });
    version_row::record(tx, command, "app.approval.decided", audited, extra).await?;
    if decision == Decision::Approved {
        version_row::set_status(tx, version_id, VersionStatus::Published).await?;
        version_row::record(tx, command, "app.published", audited, json!({})).await?;
    }
    version_row::answer(tx, Some(tenant), name, version_id).await
}
