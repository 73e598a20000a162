//! Transitions of one of the tenant's own versions (SPEC §3.1): publish (200 published, 202
//! when an approval request opens), approve and reject (optional `{comment}`), and withdraw
//! (`DELETE`). The stage decides each against the version as it is; a wrong-state call is 409
//! `conflict`. Platform versions follow the release: no tenant can change one (409).

use http::{Response, StatusCode};
use readers::apps::versions;
use service::http::{Body, response};
use topics::apps::{Approve, Publish, Publisher, Reject, Version, VersionStatus, Withdraw};
use uuid::Uuid;

use super::apps::viewer;
use crate::call::Call;
use crate::commands::{self, Origin};
use crate::comment;
use crate::error::Error;
use crate::path;
use crate::state::State;

/// The version the route names, when the caller's tenant published it.
async fn own_version(
    state: &State,
    origin: Origin<'_>,
    name: &str,
    id: &str,
) -> Result<(String, Uuid, Version), Error> {
    state.apps.ready()?;
    let name = path::app_name(name)?.to_owned();
    let id = path::id("id", id)?;
    let version = versions::get(&state.reads.pool, viewer(origin.caller), &name, id)
        .await?
        .ok_or(Error::NotFound)?;
    if version.publisher == Publisher::Platform {
        return Err(Error::Conflict(
            "Platform versions follow the release; no tenant can change one.".into(),
        ));
    }
    Ok((name, id, version))
}

pub(crate) async fn publish(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name, id) = (
        call.state,
        call.origin(),
        call.param("name"),
        call.param("id"),
    );
    let (name, version_id, _) = own_version(state, origin, name, id).await?;
    let version = commands::submit(&state.commands, origin, Publish { version_id, name }).await?;
    // Still `uploaded`: an approval request opened instead.
    let status = if version.status == VersionStatus::Published {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok(response::json(status, &version))
}

/// How a publish request is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Approve,
    Reject,
}

pub(crate) async fn approve(call: Call<'_>) -> Result<Response<Body>, Error> {
    decide(call, Verdict::Approve).await
}

pub(crate) async fn reject(call: Call<'_>) -> Result<Response<Body>, Error> {
    decide(call, Verdict::Reject).await
}

/// `approve` or `reject`, with the optional `{comment}`.
async fn decide(call: Call<'_>, verdict: Verdict) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let (name, id) = (call.param("name"), call.param("id"));
    let (name, version_id, _) = own_version(state, origin, name, id).await?;
    let comment = comment::read(call).await?;
    let version = match verdict {
        Verdict::Approve => {
            let approve = Approve {
                version_id,
                name,
                comment,
            };
            commands::submit(&state.commands, origin, approve).await?
        }
        Verdict::Reject => {
            let reject = Reject {
                version_id,
                name,
                comment,
            };
            commands::submit(&state.commands, origin, reject).await?
        }
    };
    Ok(response::json(StatusCode::OK, &version))
}

pub(crate) async fn withdraw(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name, id) = (
        call.state,
        call.origin(),
        call.param("name"),
        call.param("id"),
    );
    let (name, version_id, version) = own_version(state, origin, name, id).await?;
    let seen = version.status;
    let command = Withdraw {
        version_id,
        name,
        seen,
    };
    let version = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &version))
}
