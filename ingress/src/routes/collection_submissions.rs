//! Collection submissions and the applicant's hand-off (SPEC §4.9, docs/hand-off.md):
//!
//! - `POST /collection-submissions` `{workflowRunId}` (`runs:write`): opens a submission bound
//!   to the run, through the runs stage; 201 with it. The wider service issues the applicant a
//!   token naming it (`kind: applicant`, `submission`).
//! - `GET /collection-submissions/:id/status` (the applicant of that submission):
//!   `{id, workflowRunId, runStatus, handoff}`, `handoff` true while the run has a pending
//!   session of an app that handles hand-off.
//! - `GET /collection-submissions/:id/handoff` (the same applicant): the module's `handoff`
//!   export with the install's config, secrets and hosts answers a fresh short-lived token for
//!   the vendor's browser SDK, or `null` once the vendor has everything; 409
//!   `handoff_unavailable` when nothing waits, 502 `handoff_failed` when the app fails. The token
//!   is never stored, logged or audited: it goes from the runner's answer to this one only.
//!
//! Another submission's id, for the applicant, is 404, as another tenant's is.

use http::{Response, StatusCode};
use readers::apps::stored_version::StoredVersion;
use readers::callbacks::Target;
use readers::callbacks::handoff;
use readers::submissions::{self, Submission};
use serde::Deserialize;
use serde_json::{Value, json};
use service::http::{Body, response};
use topics::runs::OpenSubmission as Open;
use uuid::Uuid;

use crate::auth::Principal;
use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::Error;
use crate::path;
use crate::session_call;
use crate::state::State;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenSubmission {
    workflow_run_id: body::Id,
}

pub(crate) async fn open(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let open: OpenSubmission = call.json().await?;
    let command = Open {
        run_id: open.workflow_run_id.0,
        submission_id: Uuid::now_v7(),
    };
    let opened = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::CREATED, &opened))
}

pub(crate) async fn status(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let submission = own_submission(state, principal, id).await?;
    let tenant = readers::Tenant::new(principal.tenant);
    let waiting = handoff::waiting(&state.reads.pool, tenant, submission.workflow_run_id).await?;
    Ok(response::json(
        StatusCode::OK,
        &json!({
            "id": submission.id,
            "workflowRunId": submission.workflow_run_id,
            "runStatus": submission.run_status,
            "handoff": waiting.is_some_and(|session| session.installed),
        }),
    ))
}

pub(crate) async fn handoff(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id, request_id) = (
        call.state,
        call.principal,
        call.param("id"),
        call.request_id,
    );
    let runner = state.apps.runner.as_ref().ok_or(Error::AppsUnavailable)?;
    let submission = own_submission(state, principal, id).await?;
    let tenant = readers::Tenant::new(principal.tenant);
    let session = handoff::waiting(&state.reads.pool, tenant, submission.workflow_run_id)
        .await?
        .filter(|session| session.installed)
        .ok_or(Error::HandoffUnavailable)?;
    let version = state
        .apps
        .stored_versions
        .get(&state.reads.pool, session.version_id)
        .await?;
    if state.apps.is_blocked(&version.sha256) {
        return Err(Error::AppBlocked);
    }
    let request = handoff_request(state, &session, &version)?;
    let answered = runner
        .handoff(&request, request_id)
        .await
        .map_err(|failure| Error::HandoffFailed {
            reason: failure.code.as_str(),
        })?;
    let answer = answered.answer;
    if answer["status"] != "ok" {
        return Err(Error::HandoffFailed { reason: "error" });
    }
    Ok(response::json(
        StatusCode::OK,
        &json!({ "handoff": answer["handoff"] }),
    ))
}

/// The submission the applicant's token names, if `id` is it; anyone else's is absent.
async fn own_submission(
    state: &State,
    principal: &Principal,
    id: &str,
) -> Result<Submission, Error> {
    let id = path::id("id", id)?;
    if principal.submission != Some(id) {
        return Err(Error::NotFound);
    }
    submissions::get(
        &state.reads.pool,
        readers::Tenant::new(principal.tenant),
        id,
    )
    .await?
    .ok_or(Error::NotFound)
}

fn handoff_request(
    state: &State,
    session: &Target,
    version: &StoredVersion,
) -> Result<Value, Error> {
    let mut request = session_call::request(state, session, version)?;
    request["externalId"] = Value::String(session.external_id.clone());
    Ok(request)
}
