//! The catalogue reads (SPEC §4.7): `GET /apps` (one entry per app name the tenant sees, with
//! its install), `GET /apps/:name` (the entry with every version), `GET /apps/:name/versions`
//! (newest first, manifests unfolded) and `GET /apps/:name/usage`. A name the tenant sees no
//! version of answers 404, whoever else has it.

use http::{Response, StatusCode};
use readers::apps::{Viewer, catalogue, versions};
use serde_json::json;
use service::http::{Body, response};

use crate::auth::{Permission, Principal};
use crate::call::Call;
use crate::error::Error;
use crate::path;

/// What the caller sees: its tenant's versions, `uploaded` ones only with `apps:publish`.
pub(crate) fn viewer(principal: &Principal) -> Viewer {
    Viewer {
        tenant: readers::Tenant::new(principal.tenant),
        sees_uploaded: principal.has(Permission::AppsPublish),
    }
}

pub(crate) async fn list(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal) = (call.state, call.principal);
    let mut connection = state.reads.connection().await?;
    let items = catalogue::list(&mut connection, viewer(principal)).await?;
    Ok(response::json(StatusCode::OK, &json!({ "items": items })))
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, name) = (call.state, call.principal, call.param("name"));
    let name = path::app_name(name)?;
    let mut connection = state.reads.connection().await?;
    let entry = catalogue::get(&mut connection, viewer(principal), name)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &entry))
}

pub(crate) async fn versions(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, name) = (call.state, call.principal, call.param("name"));
    let name = path::app_name(name)?;
    let items = versions::of_app(&state.reads.pool, viewer(principal), name).await?;
    if items.is_empty() {
        return Err(Error::NotFound);
    }
    Ok(response::json(StatusCode::OK, &json!({ "items": items })))
}

/// Published definitions of the tenant that call the app (their steps and app rules written
/// out), with the actions they call, by kind and key. An app name the tenant sees no version
/// of answers 404.
pub(crate) async fn usage(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal, name) = (call.state, call.principal, call.param("name"));
    let name = path::app_name(name)?;
    let seen = versions::of_app(&state.reads.pool, viewer(principal), name).await?;
    if seen.is_empty() {
        return Err(Error::NotFound);
    }
    let tenant = readers::Tenant::new(principal.tenant);
    let items = readers::definitions::usage(&state.reads.pool, tenant, name).await?;
    Ok(response::json(StatusCode::OK, &json!({ "items": items })))
}
