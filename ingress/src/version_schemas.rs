//! The JSON Schemas of app versions' manifests, compiled once per version and place: a
//! version's manifest never changes after upload, so an entry is never stale, and compiling
//! (with the meta-schema check) costs far more than checking an instance: an install's config
//! (`/configSchema`), a test call's input and a webhook event's output
//! (`/actions/<action>/input`, `/output`) are checked against the compiled schema.

use std::borrow::Cow;
use std::sync::Arc;

use schema::Issue;
use schema::manifest::default_config_schema;
use schema::strict::Validator;
use serde_json::Value;
use uuid::Uuid;

/// Versions' schemas remembered at once.
const CAPACITY: u64 = 10_000;

/// Compiled schemas by version and the place of the schema in its manifest; `None` for one
/// that does not compile.
#[derive(Debug)]
pub(crate) struct VersionSchemas(moka::sync::Cache<(Uuid, String), Option<Arc<Validator>>>);

impl Default for VersionSchemas {
    fn default() -> Self {
        Self(moka::sync::Cache::new(CAPACITY))
    }
}

/// Where a schema is in a version's manifest.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SchemaOf<'a> {
    /// `configSchema`: an install's config.
    Config,
    /// An action's `input`.
    Input(&'a str),
    /// An action's `output`.
    Output(&'a str),
}

impl SchemaOf<'_> {
    fn key(self) -> String {
        match self {
            SchemaOf::Config => "config".to_owned(),
            SchemaOf::Input(action) => format!("input:{action}"),
            SchemaOf::Output(action) => format!("output:{action}"),
        }
    }

    /// The schema in `manifest`, as stored or with its defaults filled in: a manifest that
    /// declares no `configSchema` takes [`default_config_schema`] (an action's `input` and
    /// `output` are required).
    fn in_manifest(self, manifest: &Value) -> Cow<'_, Value> {
        match self {
            SchemaOf::Config => match manifest.get("configSchema") {
                Some(schema) => Cow::Borrowed(schema),
                None => Cow::Owned(default_config_schema()),
            },
            SchemaOf::Input(action) => Cow::Borrowed(&manifest["actions"][action]["input"]),
            SchemaOf::Output(action) => Cow::Borrowed(&manifest["actions"][action]["output"]),
        }
    }
}

impl VersionSchemas {
    /// Checks `instance` against the schema `which` of version `version_id`, whose manifest is
    /// `manifest`; each issue's path starts with `at`.
    pub(crate) fn check(
        &self,
        version_id: Uuid,
        manifest: &Value,
        which: SchemaOf<'_>,
        instance: &Value,
        at: &str,
    ) -> Result<(), Vec<Issue>> {
        let validator = self.0.get_with((version_id, which.key()), || {
            let schema = which.in_manifest(manifest);
            schema::strict::compile(&schema, "").ok().map(Arc::new)
        });
        match validator {
            Some(validator) => schema::strict::check(&validator, instance, at),
            None => Err(vec![Issue::new(at, schema::strict::UNCOMPILABLE)]),
        }
    }
}
