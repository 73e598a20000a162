//! The definitions stage: versions of workflows, rules, rule sets and collection flows, one
//! writer per key — [`create_version`] numbers the key's next version, [`publish`] makes one
//! version the key's published one after the [`checks`] of what it calls, or opens an approval
//! request that [`decide`] approves, rejects or withdraws and [`comment`] discusses.

mod checks;
mod comment;
mod create_version;
mod decide;
mod publish;

use topics::definitions::DefinitionsCommand;

use crate::Error;
use crate::stage::{Context, Stage};

/// Applies the commands of the `definitions.commands` topic, each type in its file.
#[derive(Debug, Default)]
pub(crate) struct DefinitionsStage;

impl Stage for DefinitionsStage {
    type Body = DefinitionsCommand;
    type Then = ();
    const NAME: &'static str = "definitions";
}

/// The tenant of the command being applied, as the readers take it.
fn tenant(cx: &Context) -> Result<readers::Tenant, Error> {
    Ok(readers::Tenant::new(cx.tenant()?))
}
