//! Commands of a tenant's install of an app (SPEC §3.4b): install, configure, upgrade, enable
//! and disable, uninstall, its secrets, and the audit of a test call. On
//! [`catalogue::INSTALLS`], keyed by tenant and app name, so the install and its secrets have
//! one writer: "enabled while a secret has no value" is decided against the secrets as they
//! are.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::sealed::Sealed;

topic_commands! {
    /// The commands of an install.
    pub enum InstallsCommand on catalogue::INSTALLS, version 1, replies 2,
        keyed |command, tenant| catalogue::tenant_app_key(tenant, &command.name);
    {
        Install => Installed,
        Uninstall => Uninstalled,
        StoreSecret => SecretState,
        RevokeSecret => SecretState,
        RecordTest => (),
    }
}

/// Install, configure, upgrade, enable or disable (`PUT /apps/:name/install`). The API has
/// checked `config` against the version's schema and the module against the block list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Install {
    pub name: String,
    pub version_id: Uuid,
    pub enabled: bool,
    pub config: Value,
}

/// An install as it is (`GET /apps/:name/install`, and what installing answers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    pub app_name: String,
    pub version_id: Uuid,
    pub version: String,
    pub enabled: bool,
    pub config: Value,
    /// The hosts the installed version declares.
    pub approved_hosts: Vec<String>,
    /// Secrets the installed version names that have no stored value.
    pub missing_secrets: Vec<String>,
    /// A newer version of the same publisher is published.
    pub update_available: bool,
    pub installed_by: String,
    pub installed_at: DateTime<Utc>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

/// `DELETE /apps/:name/install`; `force` fails the pending callback sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Uninstall {
    pub name: String,
    pub force: bool,
}

/// Stores or replaces a secret's value, sealed by the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoreSecret {
    pub name: String,
    pub secret: String,
    pub sealed: Sealed,
}

/// Removes a secret's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevokeSecret {
    pub name: String,
    pub secret: String,
}

/// Records that a test call ran (audit `app.tested`); nothing else is recorded of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordTest {
    pub name: String,
    pub version_id: Uuid,
    pub action: String,
    pub status: String,
    pub duration_ms: f64,
}

/// An uninstall done (`DELETE /apps/:name/install`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Uninstalled {
    pub app_name: String,
    /// Always `true`: the field tells a reader of the body what happened.
    pub uninstalled: bool,
    /// Pending callback sessions a forced uninstall failed.
    pub failed_callbacks: u64,
}

/// A secret after a store or a revoke: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretState {
    pub app_name: String,
    pub name: String,
    /// Whether a value is stored now.
    pub stored: bool,
    /// The install's missing secrets after the change; `None` (null) when not installed.
    pub missing_secrets: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Message;

    /// Commands keep the shape version 1 has on the log: the type's tag beside its fields.
    #[test]
    fn commands_keep_their_wire_shape_and_share_their_apps_key() {
        let version_id = Uuid::from_u128(7);
        let install = InstallsCommand::from(Install {
            name: "kyc".into(),
            version_id,
            enabled: true,
            config: json!({"depth": 1}),
        });
        let wire = serde_json::to_value(&install).expect("serialises");
        assert_eq!(
            wire,
            json!({"type": "install", "name": "kyc", "version_id": version_id,
                   "enabled": true, "config": {"depth": 1}})
        );
        let back: InstallsCommand = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, install);
        let revoke = InstallsCommand::from(RevokeSecret {
            name: "kyc".into(),
            secret: "API_KEY".into(),
        });
        let tenant = Some(Uuid::from_u128(1));
        assert_eq!(install.key(tenant), revoke.key(tenant));
        assert_eq!(
            serde_json::to_value(&revoke).expect("serialises")["type"],
            "revoke_secret"
        );
    }
}
