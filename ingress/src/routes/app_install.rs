//! `PUT /apps/:name/install` and `DELETE /apps/:name/install?force=` (SPEC §3.4b, §4.7 rules 3-4).
//! The API checks what it can alone: the tenant sees the version (its stored part, module and
//! manifest, read once per API instance: `stored_versions.rs`), its module is not
//! blocked (409 `app_blocked`), and `config` fits the version's `configSchema` (400 with the
//! issues; the host never fills defaults). The installs stage decides the rest against the
//! state it holds: the version is published (or the withdrawn one the install runs), no
//! secret is missing when enabling, no run waits on a callback when uninstalling.

use http::{Response, StatusCode};
use readers::apps::versions;
use serde::Deserialize;
use serde_json::{Map, Value};
use service::http::{Body, response};
use topics::installs::{Install as InstallCommand, Uninstall};

use super::apps::viewer;
use crate::body;
use crate::call::Call;
use crate::commands;
use crate::error::Error;
use crate::path;
use crate::query::Query;
use crate::version_schemas::SchemaOf;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Install {
    version_id: body::Id,
    #[serde(default = "enabled_default")]
    enabled: bool,
    #[serde(default)]
    config: Map<String, Value>,
}

fn enabled_default() -> bool {
    true
}

pub(crate) async fn put(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name) = (call.state, call.origin(), call.param("name"));
    state.apps.ready()?;
    let name = path::app_name(name)?.to_owned();
    let install: Install = call.json().await?;
    if !versions::is_visible(
        &state.reads.pool,
        viewer(origin.caller),
        &name,
        install.version_id.0,
    )
    .await?
    {
        return Err(Error::NotFound);
    }
    let version = state
        .apps
        .stored_versions
        .get(&state.reads.pool, install.version_id.0)
        .await?;
    if state.apps.is_blocked(&version.sha256) {
        return Err(Error::AppBlocked);
    }
    let config = Value::Object(install.config);
    state
        .apps
        .version_schemas
        .check(
            version.id,
            &version.manifest,
            SchemaOf::Config,
            &config,
            "/config",
        )
        .map_err(Error::body_issues)?;
    let command = InstallCommand {
        name,
        version_id: install.version_id.0,
        enabled: install.enabled,
        config,
    };
    let installed = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &installed))
}

pub(crate) async fn delete(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name, raw_query) =
        (call.state, call.origin(), call.param("name"), call.query());
    state.apps.ready()?;
    let name = path::app_name(name)?.to_owned();
    let mut query = Query::parse(raw_query);
    let force = query.boolean("force", false);
    query.finish()?;
    let uninstalled = commands::submit(&state.commands, origin, Uninstall { name, force }).await?;
    Ok(response::json(StatusCode::OK, &uninstalled))
}
