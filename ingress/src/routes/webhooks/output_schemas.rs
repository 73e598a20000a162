//! The output schemas completed events are checked against, compiled once per version and
//! action: a version's manifest never changes after upload, so an entry is never stale, and
//! compiling (with the meta-schema check) costs far more than checking an event.

use std::sync::Arc;

use readers::callbacks::Target;
use schema::Issue;
use schema::strict::Validator;
use serde_json::Value;
use uuid::Uuid;

/// Versions' actions remembered at once.
const CAPACITY: u64 = 1_000;

/// Compiled output schemas by version and action; `None` for one that does not compile.
#[derive(Debug)]
pub(crate) struct OutputSchemas(moka::sync::Cache<(Uuid, String), Option<Arc<Validator>>>);

impl Default for OutputSchemas {
    fn default() -> Self {
        Self(moka::sync::Cache::new(CAPACITY))
    }
}

impl OutputSchemas {
    /// Checks `output` against the output schema of the session's action.
    pub(super) fn check(&self, target: &Target, output: &Value) -> Result<(), Vec<Issue>> {
        let key = (target.version_id, target.action.clone());
        let validator = self.0.get_with(key, || {
            let schema = &target.manifest["actions"][&target.action]["output"];
            schema::strict::compile(schema, "").ok().map(Arc::new)
        });
        match validator {
            Some(validator) => schema::strict::check(&validator, output, "/output"),
            None => Err(vec![Issue::new("/output", schema::strict::UNCOMPILABLE)]),
        }
    }
}
