//! What deciding an approval request is, whatever it asks to publish: an app version
//! ([`apps`](super::apps), `app_approval_requests`) or a definition version
//! ([`definitions`](super::definitions), `definition_approval_requests`). Four-eyes is decided
//! here ([`four_eyes`]), and the decision is written on the request here ([`record`]), by the
//! command's principal; what approving publishes is each stage's own.

use topics::definitions::Decision;
use topics::{Outcome, RefusalCode};
use uuid::Uuid;

use crate::Error;
use crate::stage::Context;

/// Which table holds the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requests {
    AppVersions,
    Definitions,
}

/// The refusal of the requester approving their own request while the tenant's four-eyes
/// setting is on (SPEC §2.5: 403 `four_eyes`); `None` when the approval may go on.
pub(crate) async fn four_eyes<R>(
    cx: &mut Context,
    tenant: readers::Tenant,
    requested_by: &str,
) -> Result<Option<Outcome<R>>, Error> {
    let settings = readers::approval_settings::get(&mut *cx.tx, tenant).await?;
    if settings.four_eyes && requested_by == cx.command.principal.id {
        return Ok(Some(Outcome::refused(
            RefusalCode::FourEyes,
            "Four-eyes is on: someone other than the requester must approve.",
        )));
    }
    Ok(None)
}

/// Writes `decision` on request `id` (locked by the caller, still open), by the command's
/// principal, with the decider's `comment`.
pub(crate) async fn record(
    cx: &mut Context,
    requests: Requests,
    id: Uuid,
    decision: Decision,
    comment: Option<&str>,
) -> Result<(), Error> {
    let sql = match requests {
        Requests::AppVersions => {
            "UPDATE app_approval_requests SET decision = $2, decided_by = $3, \
             decided_by_name = $4, decided_at = now(), decision_comment = $5 WHERE id = $1"
        }
        Requests::Definitions => {
            "UPDATE definition_approval_requests SET decision = $2, decided_by = $3, \
             decided_by_name = $4, decided_at = now(), decision_comment = $5 WHERE id = $1"
        }
    };
    sqlx::query(sql)
        .bind(id)
        .bind(decision.as_str())
        .bind(&cx.command.principal.id)
        .bind(&cx.command.principal.name)
        .bind(comment)
        .execute(&mut *cx.tx)
        .await?;
    Ok(())
}
