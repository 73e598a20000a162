//! `POST /apps/:name/secrets/:secret` `{value}` and `DELETE` (SPEC §4.7 rules 1-2). The value
//! is sealed here, as it arrives (AES-256-GCM bound to tenant, app and secret name), so the
//! plaintext never reaches a topic, a table, a reply or a log line. A secret may be one the
//! installed version names or one a published version of the app names, so a newer version's
//! secret can be stored before the upgrade. Without `SECRET_STORE_KEY`: 503
//! `secret_store_unavailable`.

use std::sync::Arc;

use http::{Response, StatusCode};
use readers::apps::{installs, versions};
use serde::Deserialize;
use service::http::{Body, response};
use topics::apps::VersionStatus;
use topics::installs::{RevokeSecret, StoreSecret};
use topics::sealed::{Binding, SecretKeys};

use super::apps::viewer;
use crate::call::Call;
use crate::commands::{self, Origin};
use crate::error::{Error, Location};
use crate::path;
use crate::state::State;

/// The longest secret value (the runner's contract takes up to 64 KiB per secret).
const MAX_VALUE_BYTES: usize = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Value {
    value: String,
}

// Never shows the value, whatever prints it.
impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Value([redacted])")
    }
}

pub(crate) async fn store(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name, secret) = (
        call.state,
        call.origin(),
        call.param("name"),
        call.param("secret"),
    );
    let keys = secret_store(state)?;
    let name = path::app_name(name)?.to_owned();
    let secret = path::secret_name(secret)?.to_owned();
    let Value { value } = call.json().await?;
    if value.is_empty() || value.len() > MAX_VALUE_BYTES {
        return Err(Error::validation(
            Location::Body,
            "/value",
            format!("must be 1 to {MAX_VALUE_BYTES} bytes"),
        ));
    }
    require_named(state, origin, &name, &secret).await?;
    let binding = Binding {
        tenant: origin.caller.tenant,
        app: &name,
        name: &secret,
    };
    let sealed = keys.seal(binding, &value);
    drop(value);
    let command = StoreSecret {
        name,
        secret,
        sealed,
    };
    let stored = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &stored))
}

pub(crate) async fn revoke(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin, name, secret) = (
        call.state,
        call.origin(),
        call.param("name"),
        call.param("secret"),
    );
    secret_store(state)?;
    let name = path::app_name(name)?.to_owned();
    let secret = path::secret_name(secret)?.to_owned();
    let revoked = commands::submit(&state.commands, origin, RevokeSecret { name, secret }).await?;
    Ok(response::json(StatusCode::OK, &revoked))
}

/// The deployment's secret keys: apps available first (rule 9), then the store (rule 2).
fn secret_store(state: &State) -> Result<Arc<SecretKeys>, Error> {
    state.apps.ready()?;
    state
        .config
        .secret_keys
        .clone()
        .ok_or(Error::SecretStoreUnavailable)
}

/// Rule 1: the installed version or a published version of the app names `secret`.
async fn require_named(
    state: &State,
    origin: Origin<'_>,
    name: &str,
    secret: &str,
) -> Result<(), Error> {
    let seen = versions::of_app(&state.reads.pool, viewer(origin.caller), name).await?;
    if seen.is_empty() {
        return Err(Error::NotFound);
    }
    let mut connection = state.reads.connection().await?;
    let tenant = readers::Tenant::new(origin.caller.tenant);
    let installed = installs::get(&mut connection, tenant, name)
        .await?
        .map(|install| install.version_id);
    let named = seen
        .iter()
        .filter(|v| v.status == VersionStatus::Published || Some(v.id) == installed)
        .any(|v| installs::secret_names(&v.manifest).any(|s| s == secret));
    if named {
        Ok(())
    } else {
        Err(Error::validation(
            Location::Path,
            "secret",
            format!("neither the installed version nor a published version of {name} names it"),
        ))
    }
}
