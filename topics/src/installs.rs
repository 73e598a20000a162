//! Commands of a tenant's install of an app (SPEC §3.4b): install, configure, upgrade, enable
//! and disable, uninstall, its secrets, and the audit of a test call. On
//! [`catalogue::INSTALLS`], keyed by tenant and app name, so the install and its secrets have
//! one writer: "enabled while a secret has no value" is decided against the secrets as they
//! are.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::sealed::Sealed;
use crate::{Message, Topic, catalogue};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// Install, configure, upgrade, enable or disable (`PUT /apps/:name/install`). The API has
    /// checked `config` against the version's schema and the module against the block list.
    Install {
        name: String,
        version_id: Uuid,
        enabled: bool,
        config: Value,
    },
    /// `DELETE /apps/:name/install`; `force` fails the pending callback sessions.
    Uninstall { name: String, force: bool },
    /// Stores or replaces a secret's value, sealed by the API.
    StoreSecret {
        name: String,
        secret: String,
        sealed: Sealed,
    },
    /// Removes a secret's value.
    RevokeSecret { name: String, secret: String },
    /// Records that a test call ran (audit `app.tested`); nothing else is recorded of it.
    RecordTest {
        name: String,
        version_id: Uuid,
        action: String,
        status: String,
        duration_ms: f64,
    },
}

impl Command {
    pub fn app_name(&self) -> &str {
        match self {
            Command::Install { name, .. }
            | Command::Uninstall { name, .. }
            | Command::StoreSecret { name, .. }
            | Command::RevokeSecret { name, .. }
            | Command::RecordTest { name, .. } => name,
        }
    }
}

/// What an installs command answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// [`Command::Install`]: the install as it now is.
    Install(readers::apps::installs::Install),
    /// [`Command::Uninstall`].
    Uninstalled(Uninstalled),
    /// [`Command::StoreSecret`] and [`Command::RevokeSecret`].
    Secret(SecretState),
    /// [`Command::RecordTest`]: the audit row is written.
    TestRecorded,
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

impl Message for Command {
    const TOPIC: Topic = catalogue::INSTALLS;
    const VERSION: u16 = 1;
    type Answer = Answer;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_app_key(tenant, self.app_name())
    }
}
