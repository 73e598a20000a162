//! The apps stage: every transition of an app version (SPEC §3.1), one file per command family
//! — [`upload`], [`publish`], [`decide`] (approve, reject), [`withdraw`], [`platform`] (the
//! release's catalogue). Each applies inside the stage's transaction with its audit rows; a
//! wrong-state call is a `conflict` refusal.

mod decide;
mod platform;
mod publish;
mod upload;
mod version_row;
mod withdraw;

use topics::apps::AppsCommand;
use topics::settings::{SetApprovalSettings, SetAuditExportSchedule};

use super::settings::{approval_settings, audit_export_schedule};
use crate::stage::{Stage, applies};

/// Applies the commands of the `apps.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct AppsStage;

impl Stage for AppsStage {
    type Body = AppsCommand;
    type Then = ();
    const NAME: &'static str = "apps";
}

// The tenant-wide settings as ingresses of 0.1 still write them here while a deployment switches:
// applied as the settings stage applies them (`topics::apps::AppsCommand`). Goes in the release
// after.
applies!(AppsStage: SetApprovalSettings => approval_settings::apply);
applies!(AppsStage: SetAuditExportSchedule => audit_export_schedule::apply);
