//! Commands of the apps lifecycle (SPEC §3.1), on [`catalogue::APPS`], keyed by publisher and
//! app name: one writer decides every transition of an app's versions, in order. The tenant's
//! approval settings travel here too, keyed by the tenant alone. The platform's own versions
//! (the release's catalogue) are commands without a tenant.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::command::topic_commands;
use crate::labels::labels;
use crate::{Command, catalogue};

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

/// The commands about one version of an app, keyed by the app; each answers the version as it
/// now is (`uploaded` still, when a publish opened an approval request instead).
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

/// A tenant's scheduled audit export (docs/cases-activity-audit.md "The audit log"), keyed by the
/// tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetAuditExportSchedule {
    pub enabled: bool,
    /// Each file covers this many hours (1 to 168).
    pub interval_hours: i32,
    pub format: ExportFormat,
}

impl Command for SetAuditExportSchedule {
    type Body = AppsCommand;
    /// The schedule as stored.
    type Reply = AuditExportSchedule;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

/// What a tenant's publishing needs (not shown in SPEC; docs/apps.md "Approval settings"), keyed by
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
    type Reply = ApprovalSettings;

    fn key(&self, tenant: Option<Uuid>) -> Vec<u8> {
        catalogue::tenant_key(tenant)
    }
}

labels! {
    /// The file formats of an audit export.
    pub enum ExportFormat {
        /// One JSON event a line.
        Ndjson = "ndjson",
        /// RFC 4180, a header line first; `payload` as its JSON.
        Csv = "csv",
    }
}

impl ExportFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Ndjson => "application/x-ndjson",
            ExportFormat::Csv => "text/csv; charset=utf-8",
        }
    }
}

/// A tenant's audit export schedule, or the defaults of a tenant that set none (off, daily,
/// NDJSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditExportSchedule {
    pub enabled: bool,
    pub interval_hours: i32,
    pub format: ExportFormat,
    /// The end of the last window exported: the next run covers from here (`null` until set).
    pub covered_until: Option<DateTime<Utc>>,
    pub updated_by: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl AuditExportSchedule {
    /// What a tenant that set no schedule has.
    pub fn unset() -> Self {
        Self {
            enabled: false,
            interval_hours: 24,
            format: ExportFormat::Ndjson,
            covered_until: None,
            updated_by: None,
            updated_at: None,
        }
    }
}

/// A tenant's approval settings, as stored or the defaults of a tenant that set none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalSettings {
    pub required: bool,
    /// `null`: every kind; else the kinds (`workflow`, `rule`, `rule_set`, `collection_flow`,
    /// `app`) that need approval when `required`.
    pub required_for: Option<Vec<String>>,
    pub four_eyes: bool,
    /// `null` until the tenant sets them.
    pub updated_by: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl ApprovalSettings {
    /// A tenant that set nothing: nothing needs approval; four-eyes on for when it does.
    pub fn defaults() -> Self {
        Self {
            required: false,
            required_for: None,
            four_eyes: true,
            updated_by: None,
            updated_at: None,
        }
    }

    /// Whether publishing `kind` (a definition kind, or `app`) opens an approval request
    /// (SPEC §3.1, §2.5): `required`, with `requiredFor` unset or naming the kind.
    pub fn needs_approval(&self, kind: &str) -> bool {
        self.required
            && self
                .required_for
                .as_ref()
                .is_none_or(|kinds| kinds.iter().any(|k| k == kind))
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
