//! `Decide`: an open approval request approved, rejected or withdrawn (SPEC §3.4). Approving
//! publishes the version (audit `definition.approval.approved`, then `<kind>.published`), after
//! the same checks a publish makes: a version that can no longer be published is refused and
//! the request stays open. With four-eyes on, the requester approving is 403 `four_eyes`
//! ([`approvals`], as for an app version's request). A
//! decided request is 409 `conflict` whatever the decision; a rejected or withdrawn version can
//! be requested again. Who may withdraw is the API's to check (the requester, or an approver).

use sqlx::{Postgres, Transaction};
use topics::definitions::ApprovalRequest;
use topics::definitions::{Decide, Decision, Kind};
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use super::DefinitionsStage;
use super::publish::{self, approval_event};
use crate::Error;
use crate::stage::{Context, applies};
use crate::stages::approvals::{self, Requests};

/// What a decision is about.
pub(super) struct Deciding<'a> {
    pub(super) tenant: readers::Tenant,
    pub(super) kind: Kind,
    pub(super) key: &'a str,
    pub(super) approval: Uuid,
}

applies!(DefinitionsStage: Decide => apply);

async fn apply(cx: &mut Context, decide: &Decide) -> Result<Outcome<ApprovalRequest>, Error> {
    let Decide {
        kind,
        key,
        approval,
        decision,
        comment,
    } = decide;
    let deciding = Deciding {
        tenant: super::tenant(cx)?,
        kind: *kind,
        key,
        approval: *approval,
    };
    let (decision, comment) = (*decision, comment.as_deref());
    let Deciding {
        tenant,
        kind,
        key,
        approval,
    } = deciding;
    let Some(request) = lock(&mut cx.tx, &deciding).await? else {
        return Ok(Outcome::refused(
            RefusalCode::NotFound,
            "No such approval request.",
        ));
    };
    if let Some(decided) = &request.decision {
        return Ok(Outcome::refused(
            RefusalCode::Conflict,
            format!("The request is already {decided}."),
        ));
    }
    let mut publishing = None;
    if decision == Decision::Approved {
        if let Some(refused) = approvals::four_eyes(cx, tenant, &request.requested_by).await? {
            return Ok(refused);
        }
        let read = match publish::read(&mut cx.tx, tenant, kind, key, request.version).await? {
            Ok(read) => read,
            Err(refused) => return Ok(refused),
        };
        if let Err(refused) = publish::checked(&mut cx.tx, &read).await? {
            return Ok(refused);
        }
        publishing = Some(read);
    }
    approvals::record(cx, Requests::Definitions, approval, decision, comment).await?;
    let action = match decision {
        Decision::Approved => "definition.approval.approved",
        Decision::Rejected => "definition.approval.rejected",
        Decision::Withdrawn => "definition.approval.withdrawn",
    };
    let about = (kind, key, request.version);
    cx.audit(approval_event(action, about, approval));
    if let Some(publishing) = &publishing {
        publish::publish(cx, publishing, Some(approval)).await?;
    }
    let decided = readers::approvals::get(&mut *cx.tx, tenant, approval)
        .await?
        .ok_or_else(|| Error::Invalid("the request just decided is not there".into()))?;
    Ok(Outcome::done(decided))
}

/// The request, locked, when it is the tenant's and of this key.
async fn lock(
    tx: &mut Transaction<'_, Postgres>,
    deciding: &Deciding<'_>,
) -> Result<Option<ApprovalRequest>, Error> {
    let found: Option<Uuid> = sqlx::query_scalar(
        "SELECT id FROM definition_approval_requests \
         WHERE tenant_id = $1 AND id = $2 AND kind = $3 AND key = $4 FOR UPDATE",
    )
    .bind(deciding.tenant.id())
    .bind(deciding.approval)
    .bind(deciding.kind.as_str())
    .bind(deciding.key)
    .fetch_optional(&mut **tx)
    .await?;
    match found {
        Some(id) => Ok(readers::approvals::get(&mut **tx, deciding.tenant, id).await?),
        None => Ok(None),
    }
}
