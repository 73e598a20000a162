//! `parse_manifest` on whole manifests: every field, default and refusal.

use serde_json::{Value, json};

use super::*;
use crate::storable;

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
            "webhookEventId": { "header": "x-acme-event" },
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
    strict::compile(&schema, "").expect("compiles strictly");
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
            webhook_event_id: Some(ExternalIdSource::Header("x-acme-event".into())),
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
    let many = |n: usize, f: &dyn Fn(usize) -> Value| Some(Value::Array((0..n).map(f).collect()));
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
        (
            "/handles/webhookEventId",
            Some(json!({"header": "X-Event-Id"})),
            "/handles/webhookEventId",
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
    manifest["handles"] = json!({ "webhookEventId": { "header": "x-event-id" } });
    assert!(
        issues(&manifest)
            .iter()
            .any(|i| i.path == "/handles/webhook"),
        "{:#?}",
        issues(&manifest)
    );
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
fn a_flood_of_issues_is_cut_short() {
    let mut manifest = minimal();
    let keywords: serde_json::Map<String, Value> =
        (0..500).map(|i| (format!("k{i}"), json!(1))).collect();
    manifest["configSchema"] = Value::Object(keywords);
    let found = issues(&manifest);
    assert_eq!(found.len(), MAX_ISSUES + 1);
    assert!(found[MAX_ISSUES].message.contains("400 more"));
}

#[test]
fn a_nul_anywhere_in_the_manifest_is_refused_at_its_path() {
    let manifest = variant("/description", Some(json!("Screening\u{0} by Acme")));
    assert!(
        issues(&manifest).contains(&Issue::new("/description", storable::NUL_MESSAGE)),
        "{:?}",
        issues(&manifest)
    );
}
