//! `GET /approval-settings` and `PUT /approval-settings` (not shown in SPEC; docs/apps.md
//! "Approval settings"): whether publishing needs another administrator's approval, for which
//! kinds, and four-eyes. Admins only (`approvals:configure`). The write goes through the settings
//! stage like every other change.

use http::{Response, StatusCode};
use serde::Deserialize;
use service::http::{Body, response};
use topics::settings::SetApprovalSettings;

use crate::call::Call;
use crate::commands;
use crate::error::{Error, Location};

/// The kinds a tenant can require approvals for.
const KINDS: [&str; 5] = ["workflow", "rule", "rule_set", "collection_flow", "app"];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Settings {
    required: bool,
    #[serde(default)]
    required_for: Option<Vec<String>>,
    #[serde(default = "four_eyes_default")]
    four_eyes: bool,
}

fn four_eyes_default() -> bool {
    true
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, principal) = (call.state, call.principal);
    let tenant = readers::Tenant::new(principal.tenant);
    let settings = readers::approval_settings::get(&state.reads.pool, tenant).await?;
    Ok(response::json(StatusCode::OK, &settings))
}

pub(crate) async fn put(call: Call<'_>) -> Result<Response<Body>, Error> {
    let (state, origin) = (call.state, call.origin());
    let settings: Settings = call.json().await?;
    if let Some(kinds) = &settings.required_for {
        for (i, kind) in kinds.iter().enumerate() {
            if !KINDS.contains(&kind.as_str()) || kinds[..i].contains(kind) {
                return Err(Error::validation(
                    Location::Body,
                    format!("/requiredFor/{i}"),
                    "must be one of workflow, rule, rule_set, collection_flow, app, each once",
                ));
            }
        }
    }
    let command = SetApprovalSettings {
        required: settings.required,
        required_for: settings.required_for,
        four_eyes: settings.four_eyes,
    };
    let stored = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::OK, &stored))
}
