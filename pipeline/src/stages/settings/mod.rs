//! The settings stage: one writer per tenant (`settings.commands`) for the tenant-wide settings,
//! each replaced whole with its audit row: [`approval_settings`] (what publishing needs) and
//! [`audit_export_schedule`].

pub(crate) mod approval_settings;
pub(crate) mod audit_export_schedule;

use topics::settings::SettingsCommand;

use crate::stage::Stage;

/// Applies the commands of the `settings.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct SettingsStage;

impl Stage for SettingsStage {
    type Body = SettingsCommand;
    type Then = ();
    const NAME: &'static str = "settings";
}
