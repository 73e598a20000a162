//! Commands of the apps lifecycle (SPEC §3.1), on [`catalogue::APPS`], keyed by publisher and
//! app name: one writer decides every transition of an app's versions, in order. The platform's
//! own versions (the release's catalogue) are commands without a tenant. The tenant-wide
//! settings have their topic ([`crate::settings`]); those a 0.1 ingress still writes here are
//! applied too.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;
use crate::settings::{SetApprovalSettings, SetAuditExportSchedule};

labels! {
    /// The status of an app version (SPEC §2.10).
    pub enum VersionStatus {
        Uploaded = "uploaded",
        Published = "published",
        Withdrawn = "withdrawn",
    }
}

labels! {
    /// Who published a version.
    pub enum Publisher {
        /// The release's catalogue.
        Platform = "platform",
        /// The tenant itself.
        Tenant = "tenant",
    }
}

/// One app version, as the lifecycle's commands answer it and `GET /apps/:name/versions` lists
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub id: Uuid,
    pub app_name: String,
    pub version: String,
    pub publisher: Publisher,
    pub status: VersionStatus,
    pub sha256: String,
    pub size_bytes: i64,
    /// The manifest with the platform's defaults filled in (SPEC §2.8, §2.9).
    pub manifest: Value,
    pub uploaded_by: String,
    pub uploaded_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
    pub withdrawn_at: Option<DateTime<Utc>>,
    /// The open publish request, while one waits.
    pub approval_request: Option<OpenRequest>,
}

/// An open publish request of a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenRequest {
    pub id: Uuid,
    pub requested_by: String,
    pub requested_at: DateTime<Utc>,
}

/// A module the runner inspected and the object store holds under its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Module {
    pub sha256: String,
    pub size_bytes: u64,
    /// The manifest as the module answered it (its `name` and `version` name the version).
    pub manifest: Value,
}

topic_commands! {
    /// The commands about one version of an app, keyed by the app; each answers the version as
    /// it now is (`uploaded` still, when a publish opened an approval request instead).
    pub enum AppsCommand on catalogue::APPS, version 1, replies 2,
        keyed |command, tenant| catalogue::tenant_app_key(tenant, &command.name);
    {
        Upload => Version,
        Publish => Version,
        Approve => Version,
        Reject => Version,
        Withdraw => Version,
        ReleasePlatform => Version,
        RetirePlatform => Version,
        /// The tenant-wide settings ([`crate::settings`]) as ingresses of 0.1 still write them
        /// here while a deployment switches (the pipelines upgrade first): applied as the
        /// settings stage applies them. Goes in the release after.
        SetApprovalSettings,
        SetAuditExportSchedule,
    }
}

/// A tenant's new version, `uploaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Upload {
    pub version_id: Uuid,
    pub name: String,
    pub version: String,
    pub module: Module,
}

/// Publish, or open an approval request when the tenant's settings require one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Publish {
    pub version_id: Uuid,
    pub name: String,
}

/// Decide the open request: publish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approve {
    pub version_id: Uuid,
    pub name: String,
    pub comment: Option<String>,
}

/// Decide the open request: stay `uploaded`, may be requested again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    pub version_id: Uuid,
    pub name: String,
    pub comment: Option<String>,
}

/// `published` → `withdrawn`. `seen` is the status the API read when it accepted the request: a
/// transition that applied in between makes this one a conflict, so a withdraw racing an
/// approval has one winner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withdraw {
    pub version_id: Uuid,
    pub name: String,
    pub seen: VersionStatus,
}

/// A version of the release's catalogue, published (no tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleasePlatform {
    pub version_id: Uuid,
    pub name: String,
    pub version: String,
    pub module: Module,
}

/// A platform version the release no longer carries, withdrawn (no tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetirePlatform {
    pub version_id: Uuid,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    #[test]
    fn commands_of_one_app_share_a_key_and_settings_have_their_own() {
        let tenant = Some(Uuid::new_v4());
        let publish = AppsCommand::from(Publish {
            version_id: Uuid::new_v4(),
            name: "kyc".into(),
        });
        let withdraw = AppsCommand::from(Withdraw {
            version_id: Uuid::new_v4(),
            name: "kyc".into(),
            seen: VersionStatus::Published,
        });
        assert_eq!(publish.key(tenant), withdraw.key(tenant));
        let settings = AppsCommand::from(SetApprovalSettings {
            required: true,
            required_for: None,
            four_eyes: true,
        });
        assert_ne!(settings.key(tenant), publish.key(tenant));
        let json = serde_json::to_value(&withdraw).expect("json");
        assert_eq!(json["type"], "withdraw");
        assert_eq!(json["seen"], "published");
    }
}
