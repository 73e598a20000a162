//! The app manifest (SPEC §2.8, §2.9): the JSON a module's `manifest` export answers, checked
//! and turned into typed fields.
//!
//! Checking runs in two steps, and collects every issue of both:
//! 1. the manifest's shape against `schema/runner/manifest.schema.json` (draft 2020-12, every
//!    object closed: an unknown field, at the top level or inside, is refused, so a misspelt
//!    optional field such as `timeoutMS` cannot silently become its default);
//! 2. the rules a schema cannot express: a semantic version, an https `docsUrl`, unique secret
//!    names, host syntax, an asynchronous action only in a module that handles webhooks, and
//!    every embedded JSON Schema compiling strictly ([`super::strict_schema`]).
//!
//! Defaults the platform applies to absent fields are written on the typed fields below.

use std::collections::{BTreeMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::LazyLock;

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use url::Url;

use super::strict_schema::{self, pointer};
use crate::Issue;

/// The manifest's shape (also served to module authors as documentation).
pub const MANIFEST_SCHEMA: &str = include_str!("../../../schema/runner/manifest.schema.json");

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
    strict_schema::options()
        .build(&schema)
        .map_err(|e| e.to_string())
});

/// A checked manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    #[serde(deserialize_with = "whole_number")]
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
    #[serde(rename = "needs", default, with = "needs")]
    pub needs_documents: bool,
    #[serde(
        rename = "memoryMiB",
        default = "default_memory_mib",
        deserialize_with = "whole_number"
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
    #[serde(default = "default_timeout_ms", deserialize_with = "whole_number")]
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
        with = "async_action",
        skip_serializing_if = "Option::is_none"
    )]
    pub is_async: Option<u32>,
}

/// Attempts of an action (the first included) and the delay unit between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    #[serde(deserialize_with = "whole_number")]
    pub max_attempts: u32,
    /// The delay before attempt n+1 is `backoff_ms * n`.
    #[serde(deserialize_with = "whole_number")]
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
    /// The vendor browser SDK the applicant continues in; the module exports `handoff`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
}

/// Where a webhook's external id is read from.
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
        shape_issues(&error, &mut issues);
    }
    check_rules(value, &mut issues);
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

/// Issues for one error of the shape check. Unknown and missing fields point at the field
/// itself, and a bad action name at the action.
fn shape_issues(error: &ValidationError<'_>, issues: &mut Vec<Issue>) {
    let at = error.instance_path().to_string();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for name in unexpected {
                issues.push(Issue::new(
                    pointer(&at, name),
                    format!("{name:?} is not a field here"),
                ));
            }
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            issues.push(Issue::new(
                pointer(&at, name),
                format!("{name} is required"),
            ));
        }
        ValidationErrorKind::PropertyNames { error: inner } => {
            let name = inner.instance().as_str().unwrap_or_default().to_owned();
            issues.push(Issue::new(
                pointer(&at, &name),
                format!(
                    "the name {}",
                    inner.masked_with("").to_string().trim_start()
                ),
            ));
        }
        ValidationErrorKind::OneOfNotValid { .. } if at == "/handles/webhookExternalId" => {
            issues.push(Issue::new(
                at,
                "must be one of {\"json\": JSON Pointer such as \"/data/id\"}, \
                 {\"header\": lower-case header name}, {\"query\": parameter name}",
            ));
        }
        ValidationErrorKind::Not { .. } if at == "/name" => {
            issues.push(Issue::new(
                at,
                "approvals, health and uploads are reserved and cannot name an app",
            ));
        }
        _ => issues.push(Issue::new(at, error.masked().to_string())),
    }
}

/// The rules the schema cannot express. They read `value` defensively, so they also run on a
/// manifest with shape issues and report their own issues alongside.
fn check_rules(value: &Value, issues: &mut Vec<Issue>) {
    if let Some(version) = value.get("version").and_then(Value::as_str)
        && version.chars().count() <= 50
        && let Err(message) = check_version(version)
    {
        issues.push(Issue::new("/version", message));
    }
    if let Some(url) = value.get("docsUrl").and_then(Value::as_str)
        && url.starts_with("https://")
        && let Err(message) = check_docs_url(url)
    {
        issues.push(Issue::new("/docsUrl", message));
    }
    if let Some(secrets) = value.get("secrets").and_then(Value::as_array) {
        let mut seen = HashSet::new();
        for (index, secret) in secrets.iter().enumerate() {
            if let Some(name) = secret.get("name").and_then(Value::as_str)
                && !seen.insert(name)
            {
                issues.push(Issue::new(
                    format!("/secrets/{index}/name"),
                    format!("secret {name} is named twice"),
                ));
            }
        }
    }
    if let Some(hosts) = value.get("hosts").and_then(Value::as_array) {
        for (index, host) in hosts.iter().enumerate() {
            if let Some(host) = host.as_str()
                && let Err(message) = check_host(host)
            {
                issues.push(Issue::new(format!("/hosts/{index}"), message));
            }
        }
    }
    if let Some(schema) = value.get("configSchema") {
        check_schema(schema, "/configSchema", issues);
    }
    let handles_webhooks = value.pointer("/handles/webhook") == Some(&Value::Bool(true));
    if let Some(actions) = value.get("actions").and_then(Value::as_object) {
        for (name, action) in actions {
            let at = pointer("/actions", name);
            for part in ["input", "output"] {
                if let Some(schema) = action.get(part) {
                    check_schema(schema, &pointer(&at, part), issues);
                }
            }
            if action.get("async").is_some_and(Value::is_object) && !handles_webhooks {
                issues.push(Issue::new(
                    pointer(&at, "async"),
                    "an asynchronous action completes through a webhook: set handles.webhook and \
                     export handle_webhook",
                ));
            }
        }
    }
}

/// Compiles an embedded schema when the shape check accepted its type (object or boolean).
fn check_schema(schema: &Value, at: &str, issues: &mut Vec<Issue>) {
    if (schema.is_object() || schema.is_boolean())
        && let Err(found) = strict_schema::compile(schema, at)
    {
        issues.extend(found);
    }
}

/// `MAJOR.MINOR.PATCH` with an optional pre-release. Build metadata (`+...`) is refused: it
/// does not take part in version precedence, so `1.0.0+a` and `1.0.0+b` could not be ordered
/// when the platform looks for a newer version.
fn check_version(version: &str) -> Result<(), String> {
    match semver::Version::parse(version) {
        Err(error) => Err(format!(
            "not a semantic version such as 1.2.0 or 1.2.0-rc.1: {error}"
        )),
        Ok(parsed) if !parsed.build.is_empty() => {
            Err("build metadata (+...) is not allowed in a version".to_owned())
        }
        Ok(_) => Ok(()),
    }
}

fn check_docs_url(url: &str) -> Result<(), String> {
    let parsed = Url::parse(url).map_err(|error| format!("not a URL: {error}"))?;
    if parsed.scheme() != "https" {
        return Err("must be an https URL".to_owned());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".to_owned());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("the URL must not carry credentials".to_owned());
    }
    Ok(())
}

/// One `hosts` entry: `localhost`, an IPv4 dotted quad, a host name, or `*.` and a host name.
/// Host names are written in lower case (so "each once" means what it says) with at least two
/// labels; IDN names in their `xn--` form.
fn check_host(host: &str) -> Result<(), String> {
    if host == "localhost" {
        return Ok(());
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        // std's parser accepts exactly the dotted quad: no octal, no short forms.
        let ip: Ipv4Addr = host.parse().map_err(|_| {
            format!("{host} is not an IPv4 address (four numbers 0 to 255, no leading zeros)")
        })?;
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(format!("{host} does not name one host"));
        }
        return Ok(());
    }
    if host.contains([':', '/', '@']) {
        return Err(format!(
            "{host:?} is not a host: write the host alone, without scheme, port or path \
             (IPv6 addresses are not allowed)"
        ));
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    check_host_name(name).map_err(|why| format!("{host:?} is not a host: {why}"))
}

fn check_host_name(name: &str) -> Result<(), &'static str> {
    if name.len() > 253 {
        return Err("a host name has at most 253 characters");
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("write host names in lower case");
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Err("a host name has at least two labels, such as vendor.com");
    }
    for label in &labels {
        let valid = (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !valid {
            return Err(
                "labels are 1 to 63 letters, digits or '-', neither starting nor ending with '-'",
            );
        }
    }
    if labels
        .last()
        .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("the last label of a host name is not a number");
    }
    Ok(())
}

/// A whole number into `T`, also from a float without a fraction: JSON Schema's `integer`
/// accepts `64.0`, so the typed fields must too.
fn whole_number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(f))
            .map(|f| f as u64)
    });
    whole
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("{number} is not a whole number in range")))
}

/// `needs` on the wire, a flag in the typed manifest.
mod needs {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    const DOCUMENTS: &str = "documents";

    pub(super) fn serialize<S: Serializer>(
        documents: &bool,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let needs: &[&str] = if *documents { &[DOCUMENTS] } else { &[] };
        needs.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<bool, D::Error> {
        let needs = Vec::<String>::deserialize(deserializer)?;
        match needs.as_slice() {
            [] => Ok(false),
            [only] if only == DOCUMENTS => Ok(true),
            _ => Err(D::Error::custom("needs is [] or [\"documents\"]")),
        }
    }
}

/// `async: {callbackTimeoutSeconds}` on the wire, the number alone in the typed action.
mod async_action {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Async {
        #[serde(deserialize_with = "super::whole_number")]
        callback_timeout_seconds: u32,
    }

    pub(super) fn serialize<S: Serializer>(
        seconds: &Option<u32>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        seconds
            .map(|callback_timeout_seconds| Async {
                callback_timeout_seconds,
            })
            .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u32>, D::Error> {
        Ok(Option::<Async>::deserialize(deserializer)?.map(|a| a.callback_timeout_seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Value {
        json!({
            "interface": 1,
            "name": "acme-kyc",
            "version": "1.2.0-rc.1",
            "description": "Identity checks by Acme.",
            "category": "KYC",
            "vendor": "Acme Ltd",
            "docsUrl": "https://docs.acme.example/kyc",
            "pricingNote": "0.10 EUR per check",
            "capabilities": ["kyc", "documents"],
            "configSchema": {
                "type": "object",
                "required": ["region"],
                "properties": {
                    "region": { "enum": ["eu", "us"] },
                    "contact": { "type": "string", "format": "email" }
                },
                "additionalProperties": false
            },
            "secrets": [
                { "name": "API_KEY", "description": "Acme API key" },
                { "name": "webhook_secret" }
            ],
            "actions": {
                "verify": {
                    "description": "Verify a person.",
                    "input": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string", "format": "uuid" },
                            "bornAt": { "type": "string", "format": "date-time" }
                        }
                    },
                    "output": { "type": "object" },
                    "timeoutMs": 20000,
                    "retry": { "maxAttempts": 3, "backoffMs": 500 },
                    "idempotent": true
                },
                "check": {
                    "input": true,
                    "output": { "$ref": "#/$defs/result", "$defs": { "result": { "type": "object" } } },
                    "async": { "callbackTimeoutSeconds": 86400 }
                }
            },
            "hosts": ["api.acme.example", "*.acme-cdn.example", "localhost", "127.0.0.1"],
            "needs": ["documents"],
            "memoryMiB": 128,
            "handles": {
                "webhook": true,
                "webhookExternalId": { "json": "/data/id" },
                "handoff": "acme-web-sdk"
            }
        })
    }

    fn minimal() -> Value {
        json!({
            "interface": 1,
            "name": "echo",
            "version": "0.1.0",
            "actions": { "echo": { "input": {}, "output": {} } }
        })
    }

    /// `valid()` with the member at `path` set to `value` (`None` removes it).
    fn variant(path: &str, value: Option<Value>) -> Value {
        let mut manifest = valid();
        let (parent, key) = path.rsplit_once('/').expect("a pointer");
        let key = key.replace("~1", "/").replace("~0", "~");
        let target = manifest.pointer_mut(parent).expect("parent exists");
        match (target, value) {
            (Value::Object(map), Some(value)) => {
                map.insert(key, value);
            }
            (Value::Object(map), None) => {
                map.remove(&key);
            }
            (Value::Array(items), Some(value)) => {
                items[key.parse::<usize>().expect("index")] = value;
            }
            _ => panic!("cannot change {path}"),
        }
        manifest
    }

    fn issues(manifest: &Value) -> Vec<Issue> {
        parse_manifest(manifest).expect_err("refused")
    }

    #[test]
    fn the_manifest_schema_is_itself_a_strict_draft_2020_12_schema() {
        let schema: Value = serde_json::from_str(MANIFEST_SCHEMA).expect("JSON");
        strict_schema::compile(&schema, "").expect("compiles strictly");
        assert!(MANIFEST_VALIDATOR.is_ok());
    }

    #[test]
    fn a_full_manifest_is_parsed_into_typed_fields() {
        let manifest = parse_manifest(&valid()).expect("valid");
        assert_eq!(manifest.name, "acme-kyc");
        assert_eq!(manifest.version, "1.2.0-rc.1");
        assert_eq!(
            manifest.docs_url.as_deref(),
            Some("https://docs.acme.example/kyc")
        );
        assert_eq!(manifest.secrets.len(), 2);
        assert_eq!(manifest.secrets[1].description, None);
        let verify = &manifest.actions["verify"];
        assert_eq!(verify.timeout_ms, 20_000);
        assert_eq!(
            verify.retry,
            Some(Retry {
                max_attempts: 3,
                backoff_ms: 500
            })
        );
        assert!(verify.idempotent);
        assert_eq!(verify.is_async, None);
        let check = &manifest.actions["check"];
        assert_eq!(check.is_async, Some(86_400));
        assert_eq!(check.timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(check.input, Value::Bool(true));
        assert!(manifest.needs_documents);
        assert_eq!(manifest.memory_mib, 128);
        assert_eq!(
            manifest.handles,
            Handles {
                webhook: true,
                webhook_external_id: Some(ExternalIdSource::Json("/data/id".into())),
                handoff: Some("acme-web-sdk".into()),
            }
        );
        // The typed manifest serialises back to the same document.
        assert_eq!(serde_json::to_value(&manifest).expect("serialises"), {
            let mut expected = valid();
            expected["actions"]["check"]["timeoutMs"] = json!(15000);
            expected["actions"]["check"]["idempotent"] = json!(false);
            expected
        });
    }

    #[test]
    fn absent_fields_take_their_defaults() {
        let manifest = parse_manifest(&minimal()).expect("valid");
        assert!(manifest.capabilities.is_empty());
        assert_eq!(manifest.config_schema, default_config_schema());
        assert!(manifest.secrets.is_empty() && manifest.hosts.is_empty());
        assert!(!manifest.needs_documents);
        assert_eq!(manifest.memory_mib, DEFAULT_MEMORY_MIB);
        assert_eq!(manifest.handles, Handles::default());
        let echo = &manifest.actions["echo"];
        assert_eq!(
            (echo.timeout_ms, echo.retry, echo.idempotent, echo.is_async),
            (DEFAULT_TIMEOUT_MS, None, false, None)
        );
    }

    #[test]
    fn whole_numbers_written_as_floats_are_accepted() {
        let mut manifest = minimal();
        manifest["memoryMiB"] = json!(32.0);
        manifest["interface"] = json!(1.0);
        manifest["actions"]["echo"]["timeoutMs"] = json!(1000.0);
        let parsed = parse_manifest(&manifest).expect("valid");
        assert_eq!(
            (parsed.memory_mib, parsed.actions["echo"].timeout_ms),
            (32, 1000)
        );
    }

    #[test]
    fn every_invalid_variant_is_reported_at_its_path() {
        let long = |n: usize| Some(json!("x".repeat(n)));
        let many =
            |n: usize, f: &dyn Fn(usize) -> Value| Some(Value::Array((0..n).map(f).collect()));
        let cases: Vec<(&str, Option<Value>, &str)> = vec![
            ("/interface", Some(json!(2)), "/interface"),
            ("/interface", None, "/interface"),
            ("/name", Some(json!("Acme")), "/name"),
            ("/name", Some(json!("-acme")), "/name"),
            ("/name", Some(json!("health")), "/name"),
            ("/name", Some(json!("a".repeat(101))), "/name"),
            ("/name", None, "/name"),
            ("/version", Some(json!("1.2")), "/version"),
            ("/version", Some(json!("01.2.3")), "/version"),
            ("/version", Some(json!("1.2.3+build.5")), "/version"),
            (
                "/version",
                Some(json!(format!("1.2.3-{}", "a".repeat(45)))),
                "/version",
            ),
            ("/description", long(501), "/description"),
            ("/category", long(61), "/category"),
            ("/vendor", long(101), "/vendor"),
            (
                "/docsUrl",
                Some(json!("http://docs.acme.example")),
                "/docsUrl",
            ),
            ("/docsUrl", Some(json!("https://")), "/docsUrl"),
            ("/pricingNote", long(281), "/pricingNote"),
            (
                "/capabilities",
                many(21, &|i| json!(format!("t{i}"))),
                "/capabilities",
            ),
            ("/capabilities", Some(json!(["ok", 7])), "/capabilities/1"),
            ("/configSchema", Some(json!("object")), "/configSchema"),
            (
                "/configSchema",
                Some(json!({"type": "object", "propertiez": {}})),
                "/configSchema/propertiez",
            ),
            (
                "/configSchema",
                Some(json!({"type": "strng"})),
                "/configSchema/type",
            ),
            (
                "/configSchema",
                Some(json!({"$schema": "http://json-schema.org/draft-07/schema#"})),
                "/configSchema/$schema",
            ),
            (
                "/configSchema",
                Some(json!({"definitions": {"a": {}}})),
                "/configSchema/definitions",
            ),
            (
                "/secrets",
                many(21, &|i| json!({"name": format!("S{i}")})),
                "/secrets",
            ),
            (
                "/secrets/0",
                Some(json!({"name": "1KEY"})),
                "/secrets/0/name",
            ),
            (
                "/secrets/0",
                Some(json!({"name": format!("K{}", "x".repeat(64))})),
                "/secrets/0/name",
            ),
            (
                "/secrets/1",
                Some(json!({"name": "API_KEY"})),
                "/secrets/1/name",
            ),
            (
                "/secrets/0",
                Some(json!({"name": "A", "value": "x"})),
                "/secrets/0/value",
            ),
            ("/secrets/0", Some(json!({})), "/secrets/0/name"),
            ("/actions", Some(json!({})), "/actions"),
            ("/actions", None, "/actions"),
            (
                "/actions/bad-name",
                Some(json!({"input": {}, "output": {}})),
                "/actions/bad-name",
            ),
            ("/actions/verify/output", None, "/actions/verify/output"),
            (
                "/actions/verify/timeoutMs",
                Some(json!(99)),
                "/actions/verify/timeoutMs",
            ),
            (
                "/actions/verify/timeoutMs",
                Some(json!(60001)),
                "/actions/verify/timeoutMs",
            ),
            (
                "/actions/verify/timeoutMs",
                Some(json!(150.5)),
                "/actions/verify/timeoutMs",
            ),
            (
                "/actions/verify/retry",
                Some(json!({"maxAttempts": 6, "backoffMs": 0})),
                "/actions/verify/retry/maxAttempts",
            ),
            (
                "/actions/verify/retry",
                Some(json!({"maxAttempts": 2, "backoffMs": -1})),
                "/actions/verify/retry/backoffMs",
            ),
            (
                "/actions/verify/retry",
                Some(json!({"maxAttempts": 2})),
                "/actions/verify/retry/backoffMs",
            ),
            (
                "/actions/verify/idempotent",
                Some(json!("yes")),
                "/actions/verify/idempotent",
            ),
            (
                "/actions/verify/timeoutMS",
                Some(json!(1000)),
                "/actions/verify/timeoutMS",
            ),
            (
                "/actions/check/async",
                Some(json!({"callbackTimeoutSeconds": 604_801})),
                "/actions/check/async/callbackTimeoutSeconds",
            ),
            (
                "/actions/check/async",
                Some(json!({"callbackTimeoutSeconds": 0})),
                "/actions/check/async/callbackTimeoutSeconds",
            ),
            (
                "/actions/verify/input",
                Some(json!({"properties": {"colour": {"type": "string", "format": "colour"}}})),
                "/actions/verify/input/properties/colour/format",
            ),
            (
                "/actions/verify/output",
                Some(json!({"type": "string", "pattern": "(unclosed"})),
                "/actions/verify/output/pattern",
            ),
            (
                "/hosts",
                many(21, &|i| json!(format!("h{i}.acme.example"))),
                "/hosts",
            ),
            (
                "/hosts",
                Some(json!(["a.acme.example", "a.acme.example"])),
                "/hosts",
            ),
            ("/hosts/0", Some(json!("API.acme.example")), "/hosts/0"),
            ("/hosts/0", Some(json!("*.com")), "/hosts/0"),
            (
                "/hosts/0",
                Some(json!("https://api.acme.example")),
                "/hosts/0",
            ),
            ("/hosts/0", Some(json!("256.1.1.1")), "/hosts/0"),
            ("/hosts/0", Some(json!("::1")), "/hosts/0"),
            ("/hosts/0", Some(json!("api.acme.example:8443")), "/hosts/0"),
            ("/needs", Some(json!(["network"])), "/needs/0"),
            ("/needs", Some(json!(["documents", "documents"])), "/needs"),
            ("/memoryMiB", Some(json!(8)), "/memoryMiB"),
            ("/memoryMiB", Some(json!(512)), "/memoryMiB"),
            ("/memoryMiB", Some(json!("64")), "/memoryMiB"),
            ("/handles/webhook", Some(json!("yes")), "/handles/webhook"),
            (
                "/handles/webhookExternalId",
                Some(json!({"json": "data.id"})),
                "/handles/webhookExternalId",
            ),
            (
                "/handles/webhookExternalId",
                Some(json!({"header": "X-Acme-Id"})),
                "/handles/webhookExternalId",
            ),
            (
                "/handles/webhookExternalId",
                Some(json!({"json": "/a", "query": "id"})),
                "/handles/webhookExternalId",
            ),
            ("/handles/handoff", Some(json!("")), "/handles/handoff"),
            ("/handles/extra", Some(json!(true)), "/handles/extra"),
            ("/extra", Some(json!(1)), "/extra"),
        ];
        assert!(cases.len() >= 30);
        for (path, value, expected) in cases {
            let manifest = variant(path, value.clone());
            let found = issues(&manifest);
            assert!(
                found.iter().any(|issue| issue.path == expected),
                "setting {path} to {value:?}: expected an issue at {expected}, got {found:#?}"
            );
        }
    }

    #[test]
    fn cross_field_rules_are_reported_at_the_field_that_breaks_them() {
        // An asynchronous action without webhooks can never complete.
        let mut manifest = valid();
        manifest["handles"] = json!({ "webhook": false });
        let found = issues(&manifest);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].path, "/actions/check/async");
        // Where to read an external id only matters with webhooks.
        let mut manifest = minimal();
        manifest["handles"] = json!({ "webhookExternalId": { "query": "id" } });
        assert!(
            issues(&manifest)
                .iter()
                .any(|i| i.path == "/handles/webhook")
        );
    }

    #[test]
    fn every_issue_is_collected_not_just_the_first() {
        let mut manifest = valid();
        manifest["name"] = json!("Bad Name");
        manifest["memoryMiB"] = json!(1);
        manifest["hosts"] = json!(["UPPER.example"]);
        manifest["secrets"] = json!([{ "name": "A" }, { "name": "A" }]);
        manifest["configSchema"] = json!({ "propertiez": {}, "colour": 1, "type": "object" });
        let paths: Vec<String> = issues(&manifest).into_iter().map(|i| i.path).collect();
        for expected in [
            "/name",
            "/memoryMiB",
            "/hosts/0",
            "/secrets/1/name",
            "/configSchema/propertiez",
            "/configSchema/colour",
        ] {
            assert!(
                paths.iter().any(|p| p == expected),
                "{expected} in {paths:?}"
            );
        }
    }

    #[test]
    fn a_manifest_that_is_not_an_object_is_refused_at_the_root() {
        for value in [json!([]), json!("manifest"), Value::Null] {
            assert!(issues(&value).iter().any(|i| i.path.is_empty()));
        }
    }

    #[test]
    fn unknown_keywords_and_formats_are_refused_and_known_formats_accepted() {
        let unknown_keyword = json!({ "type": "object", "propertiez": {} });
        let found = strict_schema::compile(&unknown_keyword, "").expect_err("refused");
        assert_eq!(found[0].path, "/propertiez");
        let unknown_format = json!({ "type": "string", "format": "colour" });
        let found = strict_schema::compile(&unknown_format, "").expect_err("refused");
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
            strict_schema::compile(&schema, "").unwrap_or_else(|e| panic!("{format}: {e:?}"));
        }
        // Formats are asserted, not just annotations.
        let email = strict_schema::compile(&json!({ "format": "email" }), "").expect("compiles");
        assert!(email.is_valid(&json!("a@b.example")));
        assert!(!email.is_valid(&json!("not an address")));
    }

    #[test]
    fn references_stay_inside_the_schema() {
        let remote = json!({ "$ref": "https://schemas.example/person.json" });
        let found = strict_schema::compile(&remote, "/x").expect_err("refused");
        assert!(found[0].path.starts_with("/x"), "{found:?}");
        assert_eq!(found[0].path, "/x/$ref");
        let relative = json!({ "allOf": [{ "$ref": "person.json" }] });
        let found = strict_schema::compile(&relative, "").expect_err("refused");
        assert_eq!(found[0].path, "/allOf/0/$ref");
        let missing = json!({ "properties": { "a": { "$ref": "#/$defs/nothing" } } });
        let found = strict_schema::compile(&missing, "").expect_err("refused");
        assert_eq!(found[0].path, "/properties/a/$ref");
        // With an embedded resource the compiler decides, and still fetches nothing.
        let with_id = json!({ "$id": "https://x.example/s", "$ref": "other" });
        strict_schema::compile(&with_id, "").expect_err("refused");
        let local = json!({ "$defs": { "a": { "type": "string" } }, "$ref": "#/$defs/a" });
        let validator = strict_schema::compile(&local, "").expect("compiles");
        assert!(!validator.is_valid(&json!(1)));
        let recursive = json!({ "type": "array", "items": { "$ref": "#" } });
        strict_schema::compile(&recursive, "").expect("compiles");
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
        let found = strict_schema::compile(&schema, "").expect_err("refused");
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

    #[test]
    fn host_shapes() {
        for good in [
            "localhost",
            "10.0.0.7",
            "api.vendor.com",
            "*.vendor.com",
            "xn--bcher-kva.example",
            "a-b.c1.example",
        ] {
            assert_eq!(check_host(good), Ok(()), "{good}");
        }
        for bad in [
            "vendor",
            "*.com",
            "*.*.vendor.com",
            "-a.vendor.com",
            "a..vendor.com",
            "vendor.com.",
            "01.2.3.4",
            "1.2.3",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "1.2.3.4.example.123",
            "bücher.example",
            "api_v1.vendor.com",
        ] {
            assert!(check_host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_flood_of_issues_is_cut_short() {
        let mut manifest = minimal();
        let keywords: serde_json::Map<String, Value> =
            (0..500).map(|i| (format!("k{i}"), json!(1))).collect();
        manifest["configSchema"] = Value::Object(keywords);
        let found = issues(&manifest);
        assert_eq!(found.len(), MAX_ISSUES + 1);
        assert!(found[MAX_ISSUES].message.contains("400 more"));
    }
}
