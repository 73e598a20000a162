//! Commands of the apps lifecycle (SPEC §3.1), on [`catalogue::APPS`], keyed by publisher and
//! app name: one writer decides every transition of an app's versions, in order. The tenant's
//! approval settings travel here too, keyed by the tenant alone. The platform's own versions
//! (the release's catalogue) are commands without a tenant.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{Message, Topic, catalogue};

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A tenant's new version, `uploaded`.
    Upload {
        version_id: Uuid,
        name: String,
        version: String,
        module: Module,
    },
    /// Publish, or open an approval request when the tenant's settings require one.
    Publish { version_id: Uuid, name: String },
    /// Decide the open request: publish.
    Approve {
        version_id: Uuid,
        name: String,
        comment: Option<String>,
    },
    /// Decide the open request: stay `uploaded`, may be requested again.
    Reject {
        version_id: Uuid,
        name: String,
        comment: Option<String>,
    },
    /// `published` → `withdrawn`. `seen` is the status the API read when it accepted the
    /// request: a transition that applied in between makes this one a conflict, so a withdraw
    /// racing an approval has one winner.
    Withdraw {
        version_id: Uuid,
        name: String,
        seen: VersionStatus,
    },
    /// A version of the release's catalogue, published (no tenant).
    ReleasePlatform {
        version_id: Uuid,
        name: String,
        version: String,
        module: Module,
    },
    /// A platform version the release no longer carries, withdrawn (no tenant).
    RetirePlatform { version_id: Uuid, name: String },
    /// The tenant's approval settings (keyed by the tenant).
    SetApprovalSettings(ApprovalSettings),
    /// The tenant's scheduled audit export (keyed by the tenant).
    SetAuditExportSchedule(AuditExportSchedule),
}

/// A tenant's scheduled audit export (README "The audit log").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditExportSchedule {
    pub enabled: bool,
    /// Each file covers this many hours (1 to 168).
    pub interval_hours: i32,
    pub format: readers::audit::Format,
}

/// What a tenant's publishing needs (not shown in SPEC; README "Approval settings").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalSettings {
    /// Publishing needs another administrator's approval.
    pub required: bool,
    /// The kinds that need it when `required`: `None` means every kind, `app` included.
    pub required_for: Option<Vec<String>>,
    /// The requester may not approve their own request.
    pub four_eyes: bool,
}

impl Command {
    /// The app the command is about; `None` for the tenant-wide settings.
    pub fn app_name(&self) -> Option<&str> {
        match self {
            Command::Upload { name, .. }
            | Command::Publish { name, .. }
            | Command::Approve { name, .. }
            | Command::Reject { name, .. }
            | Command::Withdraw { name, .. }
            | Command::ReleasePlatform { name, .. }
            | Command::RetirePlatform { name, .. } => Some(name),
            Command::SetApprovalSettings(_) | Command::SetAuditExportSchedule(_) => None,
        }
    }
}

/// What an apps command answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Every command about a version: the version as it now is (`uploaded` still, when a
    /// publish opened an approval request instead).
    Version(Box<readers::apps::versions::AppVersion>),
    /// [`Command::SetApprovalSettings`]: the settings as stored.
    ApprovalSettings(readers::approval_settings::ApprovalSettings),
    /// [`Command::SetAuditExportSchedule`]: the schedule as stored.
    AuditExportSchedule(readers::audit_exports::Schedule),
}

impl Message for Command {
    const TOPIC: Topic = catalogue::APPS;
    const VERSION: u16 = 1;
    type Answer = Answer;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        match self.app_name() {
            Some(name) => catalogue::tenant_app_key(tenant, name),
            None => catalogue::tenant_key(tenant),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_of_one_app_share_a_key_and_settings_have_their_own() {
        let tenant = Some(Uuid::new_v4());
        let publish = Command::Publish {
            version_id: Uuid::new_v4(),
            name: "kyc".into(),
        };
        let withdraw = Command::Withdraw {
            version_id: Uuid::new_v4(),
            name: "kyc".into(),
            seen: VersionStatus::Published,
        };
        assert_eq!(publish.key(tenant), withdraw.key(tenant));
        let settings = Command::SetApprovalSettings(ApprovalSettings {
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
