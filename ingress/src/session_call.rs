//! The runner request of a call of a callback session's module (SPEC §4.10): the version that
//! started the session, with the install's config, secrets and hosts, and the `call` object
//! with its callback URL (SPEC §4.8: the route of the version's publisher, on
//! `WEBHOOK_PUBLIC_URL`). The webhook and hand-off routes add what their export reads.

use readers::apps::stored_version::StoredVersion;
use readers::callbacks::Target;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::error::Error;
use crate::install_secrets;
use crate::state::State;

/// The request's common part for the session `target` started by `version`; the secrets are
/// opened for this call only.
pub(crate) fn request(
    state: &State,
    target: &Target,
    version: &StoredVersion,
) -> Result<Value, Error> {
    let app = target.app_name.as_str();
    let secrets = install_secrets::open(state, target.tenant_id, app, target.sealed_secrets())?;
    let mut call = json!({ "id": Uuid::now_v7(), "tenantId": target.tenant_id });
    if let Some(base) = &state.config.webhook_public_url {
        call["callbackUrl"] = Value::String(callback_url(base, app, version.publisher));
    }
    Ok(json!({
        "module": version.sha256,
        "app": { "name": app, "version": version.version },
        "call": call,
        "config": target.config.clone().unwrap_or_else(|| json!({})),
        "secrets": secrets,
        "hosts": target.approved_hosts.clone().unwrap_or_default(),
        "memoryMiB": version.manifest["memoryMiB"],
    }))
}

/// The webhook route of `app` of `publisher` (`None`: the platform) on `base`.
fn callback_url(base: &str, app: &str, publisher: Option<Uuid>) -> String {
    match publisher {
        None => format!("{base}/webhooks/apps/{app}"),
        Some(tenant) => format!("{base}/webhooks/apps/{app}/tenants/{tenant}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_url_is_the_publishers_webhook_route() {
        let tenant = Uuid::from_u128(7);
        assert_eq!(
            callback_url("https://hooks.example", "kyc", None),
            "https://hooks.example/webhooks/apps/kyc"
        );
        assert_eq!(
            callback_url("https://hooks.example", "kyc", Some(tenant)),
            format!("https://hooks.example/webhooks/apps/kyc/tenants/{tenant}")
        );
    }
}
