//! The tenant-wide settings (docs/apps.md "Approval settings"; docs/cases-activity-audit.md
//! "The audit log"), on [`catalogue::SETTINGS`], keyed by tenant so a tenant's settings have one
//! writer: what publishing needs, and the scheduled audit export. Each is replaced whole.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::catalogue;
use crate::command::topic_commands;
use crate::labels::labels;

topic_commands! {
    /// The commands of a tenant's settings.
    pub enum SettingsCommand on catalogue::SETTINGS, version 1, replies 1,
        keyed |_command, tenant| catalogue::tenant_key(tenant);
    {
        SetApprovalSettings => ApprovalSettings,
        SetAuditExportSchedule => AuditExportSchedule,
    }
}

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
    use crate::apps::AppsCommand;
    use uuid::Uuid;

    #[test]
    fn a_setting_written_by_an_ingress_of_0_1_reads_on_the_apps_topic_as_on_its_own() {
        let settings = SetApprovalSettings {
            required: true,
            required_for: None,
            four_eyes: true,
        };
        let tenant = Some(Uuid::new_v4());
        let former = serde_json::to_value(AppsCommand::from(settings.clone())).expect("json");
        let now = serde_json::to_value(SettingsCommand::from(settings.clone())).expect("json");
        assert_eq!(former, now, "the same body on either topic");
        assert_eq!(former["type"], "set_approval_settings");
        assert_eq!(
            AppsCommand::from(settings.clone()).key(tenant),
            SettingsCommand::from(settings).key(tenant)
        );
    }
}
