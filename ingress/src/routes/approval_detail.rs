//! `GET /approvals/:id` (SPEC §2.6, §4.6): what an approver reads before deciding. The request;
//! the requested version in full; the key's published version; the diff (from the published
//! version, or from the previous one when the requested version is itself published or nothing
//! is); the latest completed backtest of the version (docs/definitions-and-runs.md "Backtests");
//! what the version names (`dependencies`, each definition with its published version, each app
//! with the actions it calls); the published definitions that name the key (`usage`); who may
//! approve (`approvers`, from the user directory, the requester marked under four-eyes); and the
//! discussion, oldest first.

use http::{Response, StatusCode};
use readers::Tenant;
use readers::approvals::approvers::{self, Approver};
use readers::approvals::diff::{self, Diff};
use readers::approvals::usage::{self, Reference};
use readers::{approvals, backtests, definitions};
use serde::Serialize;
use service::http::{Body, response};
use topics::backtests::Backtest;
use topics::definitions::{ApprovalRequest, Body as DefinitionBody, Comment, Kind, Version};

use crate::auth::Permission;
use crate::call::Call;
use crate::error::Error;
use crate::path;
use crate::state::State;

/// The answer (SPEC §2.6; `discussion` after `approvers`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    approval: ApprovalRequest,
    definition: Version,
    published_version: Option<i32>,
    diff: Option<Diff>,
    backtest: Option<Backtest>,
    dependencies: Vec<Reference>,
    usage: Vec<Reference>,
    approvers: Vec<Approver>,
    discussion: Vec<Comment>,
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, id) = (call.state, call.principal, call.param("id"));
    let id = path::id("id", id)?;
    let tenant = Tenant::new(principal.tenant);
    // One connection, one query after another: a detail never takes more of the pool than a
    // list does, however many approvers read at once.
    let mut connection = state.reads.connection().await?;
    let approval = approvals::get(&mut *connection, tenant, id)
        .await?
        .ok_or(Error::NotFound)?;
    let (kind, key, version) = (
        approval.kind.as_str(),
        approval.key.as_str(),
        approval.version,
    );
    let definition = definitions::version(&mut *connection, tenant, kind, key, version).await?;
    let published = definitions::published(&mut *connection, tenant, kind, key).await?;
    let previous = match version.checked_sub(1).filter(|v| *v > 0) {
        Some(previous) => {
            definitions::version(&mut *connection, tenant, kind, key, previous).await?
        }
        None => None,
    };
    let usage = usage::of(&mut *connection, tenant, kind, key).await?;
    let approve = Permission::ApprovalsDecide.as_str();
    let holders = readers::users::holding(&mut *connection, tenant, approve).await?;
    let settings = readers::approval_settings::get(&mut *connection, tenant).await?;
    let discussion = approvals::comments(&mut *connection, tenant, id).await?;
    let backtest =
        backtests::latest_completed(&mut *connection, tenant, (kind, key, version)).await?;
    drop(connection);
    let definition = definition.ok_or_else(|| {
        Error::Internal(format!("approval {id} names a version that is not there"))
    })?;
    let published_version = published.as_ref().map(|published| published.version);
    let base = match published {
        Some(published) if published.version != version => Some(published),
        _ => previous,
    };
    let diff = base.map(|base| {
        diff::between(
            kind,
            key,
            (base.version, &base.body),
            (version, &definition.body),
        )
    });
    let dependencies = dependencies(state, tenant, kind, &definition).await?;
    let detail = Detail {
        approvers: approvers::of(holders, &approval.requested_by, settings.four_eyes),
        published_version,
        approval,
        diff,
        backtest,
        dependencies,
        usage,
        discussion,
        definition,
    };
    Ok(response::json(StatusCode::OK, &detail))
}

/// What the version names: apps with the actions it calls, definitions with their published
/// version when they have one.
async fn dependencies(
    state: &State,
    tenant: Tenant,
    kind: &str,
    definition: &Version,
) -> Result<Vec<Reference>, Error> {
    let kind = Kind::parse(kind)
        .ok_or_else(|| Error::Internal(format!("an approval of kind {kind:?}")))?;
    let body = DefinitionBody::parse(kind, definition.body.clone())
        .map_err(|e| Error::Internal(format!("a stored body that does not read: {e}")))?;
    let named = body.names();
    let keys: Vec<(&str, &str)> = named
        .iter()
        .filter(|n| n.kind != "app")
        .map(|n| (n.kind, n.key.as_str()))
        .collect();
    let versions = definitions::published_versions(&state.reads.pool, tenant, &keys).await?;
    Ok(named
        .into_iter()
        .map(|n| {
            let version = versions
                .iter()
                .find(|(kind, key, _)| kind == n.kind && *key == n.key)
                .map(|(_, _, version)| *version);
            let actions = (n.kind == "app").then_some(n.actions);
            Reference {
                kind: n.kind.to_owned(),
                key: n.key,
                version,
                actions,
            }
        })
        .collect())
}
