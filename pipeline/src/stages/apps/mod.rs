//! The apps stage: every transition of an app version (SPEC §3.1), one file per command family
//! — [`upload`], [`publish`], [`decide`] (approve, reject), [`withdraw`], [`platform`] (the
//! release's catalogue) — and the tenant's [`approval_settings`] and
//! [`audit_export_schedule`]. Each applies inside the
//! stage's transaction with its audit rows; a wrong-state call is a `conflict` refusal.

mod approval_settings;
mod audit_export_schedule;
mod decide;
mod platform;
mod publish;
mod upload;
mod version_row;
mod withdraw;

use topics::apps::AppsCommand;

use crate::stage::Stage;

/// Applies the commands of the `apps.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct AppsStage;

impl Stage for AppsStage {
    type Body = AppsCommand;
    type Then = ();
    const NAME: &'static str = "apps";
}
