//! `approvers` of an approval detail (SPEC §2.6): who may approve the request, from the user
//! directory, each with the reason the requester may not under four-eyes. With four-eyes on
//! and the requester the only one holding the grant, nobody may approve: the runbook's "a
//! request nobody can approve".

use serde::Serialize;

use crate::users::User;

/// Why the requester may not approve their own request.
pub const FOUR_EYES: &str = "four_eyes: the requester may not approve their own request";

/// One user holding the grant to approve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approver {
    pub user_id: String,
    pub name: String,
    /// `false` for the requester under four-eyes.
    pub may_approve: bool,
    /// Why not, when `mayApprove` is `false`.
    pub reason: Option<&'static str>,
}

/// The `holders` of the grant as approvers of a request by `requester`.
pub fn of(holders: Vec<User>, requester: &str, four_eyes: bool) -> Vec<Approver> {
    holders
        .into_iter()
        .map(|user| {
            let refused = four_eyes && user.id == requester;
            Approver {
                may_approve: !refused,
                reason: refused.then_some(FOUR_EYES),
                user_id: user.id,
                name: user.name,
            }
        })
        .collect()
}
