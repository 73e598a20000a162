//! An install's secret values, opened for one runner call (the test call, a webhook, a
//! hand-off) and dropped with it: never stored, logged or answered.

use std::collections::BTreeMap;

use readers::apps::installs::{self, SealedSecret};
use sqlx::PgExecutor;
use topics::sealed::Sealed;
use uuid::Uuid;

use crate::error::Error;
use crate::state::State;

/// The values the tenant stored for `app`; 503 `secret_store_unavailable` when there are some
/// and this deployment has no key to open them.
pub(crate) async fn opened(
    state: &State,
    executor: impl PgExecutor<'_>,
    tenant: Uuid,
    app: &str,
) -> Result<BTreeMap<String, String>, Error> {
    let sealed = installs::sealed_secrets(executor, readers::Tenant::new(tenant), app).await?;
    open(state, tenant, app, sealed)
}

/// The values of `sealed`, already read with the rest of the install.
pub(crate) fn open(
    state: &State,
    tenant: Uuid,
    app: &str,
    sealed: Vec<SealedSecret>,
) -> Result<BTreeMap<String, String>, Error> {
    if sealed.is_empty() {
        return Ok(BTreeMap::new());
    }
    let keys = state
        .config
        .secret_keys
        .as_ref()
        .ok_or(Error::SecretStoreUnavailable)?;
    let sealed = sealed.into_iter().map(|s| {
        let value = Sealed {
            key_id: s.key_id,
            nonce: s.nonce,
            ciphertext: s.ciphertext,
        };
        (s.name, value)
    });
    keys.open_each(tenant, app, sealed)
        .map_err(|(secret, e)| Error::Internal(format!("secret {secret} of {app}: {e}")))
}
