//! Deciding a definition approval request (SPEC §3.4 leaves the routes out;
//! docs/definitions-and-runs.md "Definition approvals"): `POST /approvals/:id/approve`, `/reject`
//! (`approvals:decide`) and `/withdraw` (the requester, or a holder of `approvals:decide`), each
//! with an optional `{comment}`, and `POST /approvals/:id/comments` `{body}` adding to the
//! discussion. The route reads the request to key the command by its definition; the definitions
//! stage, the key's single writer, decides (a decided request is 409 `conflict`, the requester's
//! own approve under four-eyes 403 `four_eyes`).

use http::{Response, StatusCode};
use readers::approvals;
use serde::Deserialize;
use service::http::{Body, response};
use topics::definitions::{AddComment, ApprovalRequest, Decide, Decision};

use crate::auth::Permission;
use crate::call::Call;
use crate::commands::{self, Origin};
use crate::comment;
use crate::error::{Error, Location};
use crate::path;
use crate::state::State;

/// The longest remark of a discussion.
const MAX_REMARK_CHARS: usize = 4000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemarkBody {
    body: String,
}

pub(crate) async fn approve(call: Call<'_>) -> Result<Response<Body>, Error> {
    decide(call, Decision::Approved).await
}

pub(crate) async fn reject(call: Call<'_>) -> Result<Response<Body>, Error> {
    decide(call, Decision::Rejected).await
}

pub(crate) async fn withdraw(call: Call<'_>) -> Result<Response<Body>, Error> {
    decide(call, Decision::Withdrawn).await
}

async fn decide(call: Call<'_>, decision: Decision) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let approval = requested(state, origin, id).await?;
    let comment = comment::read(call).await?;
    let caller = origin.caller;
    if decision == Decision::Withdrawn
        && *approval.requested_by != *caller.sub
        && !caller.has(Permission::ApprovalsDecide)
    {
        return Err(Error::Forbidden {
            permission: Permission::ApprovalsDecide.as_str(),
        });
    }
    let command = Decide {
        kind: approval.kind,
        key: approval.key,
        approval: approval.id,
        decision,
        comment,
    };
    let decided = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &decided))
}

pub(crate) async fn comment(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, id) = (call.state, call.origin(), call.param("id"));
    let approval = requested(state, origin, id).await?;
    let RemarkBody { body } = call.json().await?;
    let length = body.trim().chars().count();
    if length == 0 || body.chars().count() > MAX_REMARK_CHARS {
        let message = format!("must be 1 to {MAX_REMARK_CHARS} characters, not all blank");
        return Err(Error::validation(Location::Body, "/body", message));
    }
    let command = AddComment {
        kind: approval.kind,
        key: approval.key,
        approval: approval.id,
        body,
    };
    let comment = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::CREATED, &comment))
}

/// The tenant's request the path names.
async fn requested(state: &State, origin: Origin<'_>, id: &str) -> Result<ApprovalRequest, Error> {
    let id = path::id("id", id)?;
    let tenant = readers::Tenant::new(origin.caller.tenant);
    approvals::get(&state.reads.pool, tenant, id)
        .await?
        .ok_or(Error::NotFound)
}
