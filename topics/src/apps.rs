//! Commands of the apps lifecycle (SPEC §3.1), on [`catalogue::APPS`], keyed by publisher and
//! app name: one writer decides every transition of an app's versions, in order. The tenant's
//! approval settings travel here too, keyed by the tenant alone. The platform's own versions
//! (the release's catalogue) are commands without a tenant.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::command::topic_commands;
use crate::{Command, catalogue};

/// The status of an app version (SPEC §2.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionStatus {
    Uploaded,
    Published,
    Withdrawn,
}

impl VersionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VersionStatus::Uploaded => "uploaded",
            VersionStatus::Published => "published",
            VersionStatus::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "uploaded" => Some(VersionStatus::Uploaded),
            "published" => Some(VersionStatus::Published),
            "withdrawn" => Some(VersionStatus::Withdrawn),
            _ => None,
        }
    }
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
    /// The commands of an app's versions, and the tenant-wide settings.
    pub enum AppsCommand on catalogue::APPS, version 1, replies 2 {
        Upload,
        Publish,
        Approve,
        Reject,
        Withdraw,
        ReleasePlatform,
        RetirePlatform,
        SetApprovalSettings,
        SetAuditExportSchedule,
    }
}

/// A version as it now is (`uploaded` still, when a publish opened an approval request
/// instead): what every command about a version answers.
pub type Version = readers::apps::versions::AppVersion;

/// The commands about one version of an app, keyed by the app.
macro_rules! version_command {
    ($command:ident) => {
        impl Command for $command {
            type Body = AppsCommand;
            type Reply = Version;

            fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
                catalogue::tenant_app_key(tenant, &self.name)
            }
        }
    };
}

/// A tenant's new version, `uploaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Upload {
    pub version_id: Uuid,
    pub name: String,
    pub version: String,
    pub module: Module,
}
version_command!(Upload);

/// Publish, or open an approval request when the tenant's settings require one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Publish {
    pub version_id: Uuid,
    pub name: String,
}
version_command!(Publish);

/// Decide the open request: publish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approve {
    pub version_id: Uuid,
    pub name: String,
    pub comment: Option<String>,
}
version_command!(Approve);

/// Decide the open request: stay `uploaded`, may be requested again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    pub version_id: Uuid,
    pub name: String,
    pub comment: Option<String>,
}
version_command!(Reject);

/// `published` → `withdrawn`. `seen` is the status the API read when it accepted the request: a
/// transition that applied in between makes this one a conflict, so a withdraw racing an
/// approval has one winner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withdraw {
    pub version_id: Uuid,
    pub name: String,
    pub seen: VersionStatus,
}
version_command!(Withdraw);

/// A version of the release's catalogue, published (no tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleasePlatform {
    pub version_id: Uuid,
    pub name: String,
    pub version: String,
    pub module: Module,
}
version_command!(ReleasePlatform);

/// A platform version the release no longer carries, withdrawn (no tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetirePlatform {
    pub version_id: Uuid,
    pub name: String,
}
version_command!(RetirePlatform);

/// A tenant's scheduled audit export (README "The audit log"), keyed by the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetAuditExportSchedule {
    pub enabled: bool,
    /// Each file covers this many hours (1 to 168).
    pub interval_hours: i32,
    pub format: readers::audit::Format,
}

impl Command for SetAuditExportSchedule {
    type Body = AppsCommand;
    /// The schedule as stored.
    type Reply = readers::audit_exports::Schedule;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

/// What a tenant's publishing needs (not shown in SPEC; README "Approval settings"), keyed by
/// the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetApprovalSettings {
    /// Publishing needs another administrator's approval.
    pub required: bool,
    /// The kinds that need it when `required`: `None` means every kind, `app` included.
    pub required_for: Option<Vec<String>>,
    /// The requester may not approve their own request.
    pub four_eyes: bool,
}

impl Command for SetApprovalSettings {
    type Body = AppsCommand;
    /// The settings as stored.
    type Reply = readers::approval_settings::ApprovalSettings;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
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
