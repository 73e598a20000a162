//! The strict JSON Schema compiler for the schemas inside manifests (SPEC §4.11, last
//! paragraph): draft 2020-12, the common formats asserted, an unknown keyword or format refused,
//! no reference leaving the schema.
//!
//! The `jsonschema` crate treats unknown keywords as annotations and has no switch to refuse
//! them, so `check_keywords` walks the schema against the draft 2020-12 vocabularies
//! ([`KEYWORDS`]). Then every meta-schema error is collected, and only a schema clean so far is
//! compiled (which finds what the meta-schema cannot: bad regular expressions, unresolvable
//! references).
//!
//! Instances are validated with a validator built here, so the formats a manifest's schema
//! names are asserted the same way at upload and at call time.

pub use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, Retrieve, Uri, ValidationError, ValidationOptions};
use serde_json::Value;

use crate::Issue;
use crate::issue::pointer;

/// The one dialect manifests use; `$schema`, when present, must name it.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Every keyword of the draft 2020-12 vocabularies (core, applicator, unevaluated, validation,
/// format-annotation, content, meta-data). Anything else in a schema object is refused. The
/// deprecated compatibility keywords of the 2020-12 meta-schema (`definitions`, `dependencies`,
/// `$recursiveRef`, `$recursiveAnchor`) are not in the vocabularies and are refused too.
pub const KEYWORDS: [&str; 57] = [
    // Core.
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    // Applicator.
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    // Unevaluated.
    "unevaluatedItems",
    "unevaluatedProperties",
    // Validation.
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    // Format annotation.
    "format",
    // Content.
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // Meta-data.
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
];

/// Keywords whose value is one schema.
const SCHEMA_VALUED: [&str; 11] = [
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAY_VALUED: [&str; 4] = ["prefixItems", "allOf", "anyOf", "oneOf"];
/// Keywords whose value is an object of schemas.
const SCHEMA_MAP_VALUED: [&str; 4] = [
    "$defs",
    "properties",
    "patternProperties",
    "dependentSchemas",
];

/// The options every manifest schema is compiled with.
pub fn options() -> ValidationOptions<'static> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .with_retriever(NoRemoteReferences)
}

/// Compiles `schema` strictly. The issues' paths are `at` followed by the place in the schema.
pub fn compile(schema: &Value, at: &str) -> Result<Validator, Vec<Issue>> {
    let options = options();
    let mut issues = Vec::new();
    check_keywords(schema, at, &options, &mut issues);
    let meta = jsonschema::draft202012::meta::validator();
    for error in meta.iter_errors(schema) {
        issues.push(issue(at, &error));
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    options
        .build(schema)
        .map_err(|error| vec![issue(at, &error)])
}

/// Refuses every keyword outside [`KEYWORDS`], a `$schema` other than draft 2020-12, and a
/// `format` with no check. Iterative, so a deep schema cannot exhaust the stack.
fn check_keywords(
    schema: &Value,
    at: &str,
    options: &ValidationOptions<'static>,
    issues: &mut Vec<Issue>,
) {
    let mut references = Vec::new();
    let mut embeds_resources = false;
    let mut pending = vec![(at.to_owned(), schema)];
    while let Some((path, node)) = pending.pop() {
        // A boolean is a schema; any other non-object is the meta-schema's to report.
        let Value::Object(map) = node else { continue };
        for (keyword, value) in map {
            let here = pointer(&path, keyword);
            if !KEYWORDS.contains(&keyword.as_str()) {
                issues.push(Issue::new(here, unknown_keyword(keyword)));
                continue;
            }
            match (keyword.as_str(), value) {
                ("$id", _) => embeds_resources = true,
                ("$ref" | "$dynamicRef", Value::String(reference)) => {
                    references.push((here, reference.as_str()));
                }
                ("$schema", Value::String(dialect))
                    if dialect.trim_end_matches('#') != DRAFT_2020_12 =>
                {
                    issues.push(Issue::new(
                        here,
                        format!(
                            "$schema must be {DRAFT_2020_12}: schemas are read as draft 2020-12"
                        ),
                    ));
                }
                ("format", Value::String(format))
                    if !options.is_known_format(Draft::Draft202012, format) =>
                {
                    issues.push(Issue::new(here, format!("unknown format {format:?}")));
                }
                (keyword, Value::Array(items)) if SCHEMA_ARRAY_VALUED.contains(&keyword) => {
                    for (index, item) in items.iter().enumerate().rev() {
                        pending.push((pointer(&here, &index.to_string()), item));
                    }
                }
                (keyword, Value::Object(schemas)) if SCHEMA_MAP_VALUED.contains(&keyword) => {
                    for (name, item) in schemas.iter().rev() {
                        pending.push((pointer(&here, name), item));
                    }
                }
                (keyword, item) if SCHEMA_VALUED.contains(&keyword) => {
                    pending.push((here, item));
                }
                _ => {}
            }
        }
    }
    // Without `$id` there is one document, so every reference must point into it; the
    // compiler finds the same faults but cannot say where the reference is.
    if !embeds_resources {
        for (path, reference) in references {
            if let Some(message) = outside_reference(schema, reference) {
                issues.push(Issue::new(path, message));
            }
        }
    }
}

fn outside_reference(schema: &Value, reference: &str) -> Option<String> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Some(format!(
            "{reference} is outside the schema; references resolve only inside it"
        ));
    };
    // A JSON Pointer fragment (percent-encoded ones are left to the compiler); `#name` is an
    // anchor, also left to the compiler.
    let is_pointer = fragment.is_empty() || fragment.starts_with('/');
    (is_pointer && !fragment.contains('%') && schema.pointer(fragment).is_none())
        .then(|| format!("nothing is at {reference} in this schema"))
}

fn unknown_keyword(keyword: &str) -> String {
    let hint = match keyword {
        "definitions" => " (draft 2020-12 calls it $defs)",
        "dependencies" => " (draft 2020-12 has dependentRequired and dependentSchemas)",
        "$recursiveRef" | "$recursiveAnchor" => {
            " (draft 2020-12 has $dynamicRef and $dynamicAnchor)"
        }
        _ => "",
    };
    format!("unknown keyword {keyword:?}{hint}")
}

/// What checking against a stored schema that this build no longer compiles says.
pub const UNCOMPILABLE: &str = "the version's schema does not compile under this build";

/// Checks `instance` against a manifest's `schema` (compiled strictly, so formats are asserted
/// as at upload); each issue's path is `at` followed by the place in the instance. The host
/// never fills defaults: the instance is only read.
pub fn validate(schema: &Value, instance: &Value, at: &str) -> Result<(), Vec<Issue>> {
    let validator = compile(schema, "").map_err(|_| vec![Issue::new(at, UNCOMPILABLE)])?;
    check(&validator, instance, at)
}

/// [`validate`] with a schema [`compile`]d before: for a caller that checks many instances
/// against one version's schema (compiling is most of the cost).
pub fn check(validator: &Validator, instance: &Value, at: &str) -> Result<(), Vec<Issue>> {
    // The yes-or-no check first: it stops at nothing and allocates no error, and almost every
    // instance passes it.
    if validator.is_valid(instance) {
        return Ok(());
    }
    let issues: Vec<Issue> = validator
        .iter_errors(instance)
        .take(crate::manifest::MAX_ISSUES)
        .map(|error| issue(at, &error))
        .collect();
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

/// An issue for one error of the `jsonschema` crate, at `at` + the error's place.
pub fn issue(at: &str, error: &ValidationError<'_>) -> Issue {
    let path = format!("{at}{}", error.instance_path());
    match error.kind() {
        ValidationErrorKind::Referencing(source) => Issue::new(path, source.to_string()),
        _ => Issue::new(path, error.masked().to_string()),
    }
}

/// Refuses every reference that leaves the schema: a manifest is checked without network or
/// files, and what a schema means must not change after upload.
#[derive(Debug)]
struct NoRemoteReferences;

impl Retrieve for NoRemoteReferences {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is outside the schema; references resolve only inside it").into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_keywords_and_formats_are_refused_and_known_formats_accepted() {
        let unknown_keyword = json!({ "type": "object", "propertiez": {} });
        let found = compile(&unknown_keyword, "").expect_err("refused");
        assert_eq!(found[0].path, "/propertiez");
        let unknown_format = json!({ "type": "string", "format": "colour" });
        let found = compile(&unknown_format, "").expect_err("refused");
        assert_eq!(found[0].path, "/format");
        for format in [
            "email",
            "date-time",
            "uuid",
            "uri",
            "ipv4",
            "date",
            "idn-hostname",
        ] {
            let schema = json!({ "type": "string", "format": format });
            compile(&schema, "").unwrap_or_else(|e| panic!("{format}: {e:?}"));
        }
        // Formats are asserted, not just annotations.
        let email = compile(&json!({ "format": "email" }), "").expect("compiles");
        assert!(email.is_valid(&json!("a@b.example")));
        assert!(!email.is_valid(&json!("not an address")));
    }

    #[test]
    fn references_stay_inside_the_schema() {
        let remote = json!({ "$ref": "https://schemas.example/person.json" });
        let found = compile(&remote, "/x").expect_err("refused");
        assert!(found[0].path.starts_with("/x"), "{found:?}");
        assert_eq!(found[0].path, "/x/$ref");
        let relative = json!({ "allOf": [{ "$ref": "person.json" }] });
        let found = compile(&relative, "").expect_err("refused");
        assert_eq!(found[0].path, "/allOf/0/$ref");
        let missing = json!({ "properties": { "a": { "$ref": "#/$defs/nothing" } } });
        let found = compile(&missing, "").expect_err("refused");
        assert_eq!(found[0].path, "/properties/a/$ref");
        // With an embedded resource the compiler decides, and still fetches nothing.
        let with_id = json!({ "$id": "https://x.example/s", "$ref": "other" });
        compile(&with_id, "").expect_err("refused");
        let local = json!({ "$defs": { "a": { "type": "string" } }, "$ref": "#/$defs/a" });
        let validator = compile(&local, "").expect("compiles");
        assert!(!validator.is_valid(&json!(1)));
        let recursive = json!({ "type": "array", "items": { "$ref": "#" } });
        compile(&recursive, "").expect("compiles");
    }

    #[test]
    fn keywords_are_checked_at_every_depth_but_not_in_property_names() {
        let schema = json!({
            "type": "object",
            "properties": {
                "format": { "type": "string" },
                "nested": {
                    "allOf": [{ "items": { "maxSize": 3 } }],
                    "$defs": { "x": { "not": { "requird": [] } } }
                }
            },
            "const": { "anything": "goes here" }
        });
        let found = compile(&schema, "").expect_err("refused");
        let mut paths: Vec<&str> = found.iter().map(|i| i.path.as_str()).collect();
        paths.sort_unstable();
        assert_eq!(
            paths,
            [
                "/properties/nested/$defs/x/not/requird",
                "/properties/nested/allOf/0/items/maxSize"
            ]
        );
    }
}
