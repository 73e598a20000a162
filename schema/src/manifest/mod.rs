//! The app manifest (SPEC §2.8, §2.9): the JSON a module's `manifest` export answers, checked
//! and turned into typed fields, with the defaults the platform applies to absent fields
//! (`timeoutMs` 15000, `memoryMiB` 64, the closed `configSchema`): the "unfolded" manifest that
//! uploads, calls and the version list read. The API's install and webhook routes keep the
//! manifest as stored and fill the one default their schema checks need (`configSchema`,
//! `ingress/src/version_schemas.rs`).
//!
//! Checking runs in two steps, and collects every issue of both:
//! 1. `shape`: the manifest against `runner/manifest.schema.json` (draft 2020-12, every
//!    object closed: an unknown field, at the top level or inside, is refused, so a misspelt
//!    optional field such as `timeoutMS` cannot silently become its default);
//! 2. `rules`: what a schema cannot express: a semantic version, an https `docsUrl`, unique
//!    secret names, host syntax ([`crate::host`]), an asynchronous action only in a module that
//!    handles webhooks, and every embedded JSON Schema compiling strictly ([`crate::strict`]).
//!
//! `wire` holds the wire forms that differ from the typed fields.

mod rules;
mod shape;
#[cfg(test)]
mod tests;
mod wire;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Issue;
use crate::strict;

/// The manifest's shape (also served to module authors as documentation).
pub const MANIFEST_SCHEMA: &str = include_str!("../../runner/manifest.schema.json");

/// The only `interface` version.
pub const INTERFACE: u32 = 1;
/// `timeoutMs` of an action that names none.
pub const DEFAULT_TIMEOUT_MS: u32 = 15_000;
/// `memoryMiB` of a manifest that names none.
pub const DEFAULT_MEMORY_MIB: u32 = 64;
/// Issues reported for one manifest; past it one more issue says how many were left out, so a
/// hostile manifest cannot make the refusal itself huge.
pub const MAX_ISSUES: usize = 100;

static MANIFEST_VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(MANIFEST_SCHEMA).map_err(|e| e.to_string())?;
    strict::options().build(&schema).map_err(|e| e.to_string())
});

/// A checked manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    #[serde(deserialize_with = "wire::whole_number")]
    pub interface: u32,
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing_note: Option<String>,
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Absent: [`default_config_schema`], so an app without configuration accepts only `{}`.
    #[serde(default = "default_config_schema")]
    pub config_schema: Value,
    #[serde(default)]
    pub secrets: Vec<SecretSpec>,
    pub actions: BTreeMap<String, Action>,
    #[serde(default)]
    pub hosts: Vec<String>,
    /// `needs: ["documents"]`: calls may read the tenant's clean documents. Absent means `[]`.
    #[serde(rename = "needs", default, with = "wire::needs")]
    pub needs_documents: bool,
    #[serde(
        rename = "memoryMiB",
        default = "default_memory_mib",
        deserialize_with = "wire::whole_number"
    )]
    pub memory_mib: u32,
    #[serde(default)]
    pub handles: Handles,
}

/// A secret the install must store before it can be enabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One callable action (SPEC §2.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Action {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input: Value,
    pub output: Value,
    #[serde(
        default = "default_timeout_ms",
        deserialize_with = "wire::whole_number"
    )]
    pub timeout_ms: u32,
    /// Absent: one attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    #[serde(default)]
    pub idempotent: bool,
    /// `async.callbackTimeoutSeconds` of an asynchronous action: it answers `pending` and
    /// completes through a webhook within that many seconds. `None`: a synchronous action.
    #[serde(
        rename = "async",
        default,
        with = "wire::async_action",
        skip_serializing_if = "Option::is_none"
    )]
    pub is_async: Option<u32>,
}

/// Attempts of an action (the first included) and the delay unit between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    #[serde(deserialize_with = "wire::whole_number")]
    pub max_attempts: u32,
    /// The delay before attempt n+1 is `backoff_ms * n`.
    #[serde(deserialize_with = "wire::whole_number")]
    pub backoff_ms: u32,
}

/// The optional exports the module provides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Handles {
    /// The module exports `handle_webhook`.
    #[serde(default)]
    pub webhook: bool,
    /// Where a webhook's external id is when the URL has no `?externalId=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_external_id: Option<ExternalIdSource>,
    /// Where a webhook's event id is, when the platform can read it without the module (beyond
    /// SPEC §2.8): a repeat of a recorded event is then answered without running the module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_event_id: Option<ExternalIdSource>,
    /// The vendor browser SDK the applicant continues in; the module exports `handoff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
}

/// Where a webhook's external (or event) id is read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum ExternalIdSource {
    /// A JSON Pointer into a JSON body.
    Json(String),
    /// A lower-case header name.
    Header(String),
    /// A query parameter name.
    Query(String),
}

/// The configuration schema of a manifest that declares none: the app takes no configuration,
/// so the install's config must be `{}`. (Accepting any object instead would let a typo in a
/// config key pass unnoticed.)
pub fn default_config_schema() -> Value {
    json!({ "type": "object", "additionalProperties": false })
}

fn default_timeout_ms() -> u32 {
    DEFAULT_TIMEOUT_MS
}

fn default_memory_mib() -> u32 {
    DEFAULT_MEMORY_MIB
}

/// Checks `value` against SPEC §2.8 and §2.9: the typed manifest, or every issue found (each a
/// JSON Pointer into `value` and a message).
pub fn parse_manifest(value: &Value) -> Result<Manifest, Vec<Issue>> {
    let validator = match &*MANIFEST_VALIDATOR {
        Ok(validator) => validator,
        Err(error) => {
            return Err(vec![Issue::new(
                "",
                format!("the platform's manifest schema does not compile: {error}"),
            )]);
        }
    };
    let mut issues = Vec::new();
    for error in validator.iter_errors(value) {
        shape::issues(&error, &mut issues);
    }
    rules::check(value, &mut issues);
    if !issues.is_empty() {
        if issues.len() > MAX_ISSUES {
            let left_out = issues.len() - MAX_ISSUES;
            issues.truncate(MAX_ISSUES);
            issues.push(Issue::new("", format!("{left_out} more issues not shown")));
        }
        return Err(issues);
    }
    Manifest::deserialize(value).map_err(|error| vec![Issue::new("", error.to_string())])
}
