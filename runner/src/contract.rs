//! The runner's contract as JSON Schemas (`schema::RUNNER_CONTRACT`): each definition is
//! compiled once, strictly under draft 2020-12 with formats checked, and every request and every
//! module answer is checked against its definition.

use std::collections::HashMap;
use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;

use schema::{Issue, RUNNER_CONTRACT as CONTRACT, pointer};

/// The definitions of the contract the runner checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Definition {
    InvokeRequest,
    InvokeModuleAnswer,
    WebhookRequest,
    WebhookModuleAnswer,
    HandoffRequest,
    HandoffModuleAnswer,
    CallAnswer,
    InspectAnswer,
    FailureAnswer,
}

impl Definition {
    const ALL: [Definition; 9] = [
        Definition::InvokeRequest,
        Definition::InvokeModuleAnswer,
        Definition::WebhookRequest,
        Definition::WebhookModuleAnswer,
        Definition::HandoffRequest,
        Definition::HandoffModuleAnswer,
        Definition::CallAnswer,
        Definition::InspectAnswer,
        Definition::FailureAnswer,
    ];

    fn name(self) -> &'static str {
        match self {
            Definition::InvokeRequest => "invokeRequest",
            Definition::InvokeModuleAnswer => "invokeModuleAnswer",
            Definition::WebhookRequest => "webhookRequest",
            Definition::WebhookModuleAnswer => "webhookModuleAnswer",
            Definition::HandoffRequest => "handoffRequest",
            Definition::HandoffModuleAnswer => "handoffModuleAnswer",
            Definition::CallAnswer => "callAnswer",
            Definition::InspectAnswer => "inspectAnswer",
            Definition::FailureAnswer => "failureAnswer",
        }
    }
}

static VALIDATORS: LazyLock<HashMap<Definition, Validator>> = LazyLock::new(|| {
    let contract: Value = serde_json::from_str(CONTRACT).expect("contract.json is JSON");
    Definition::ALL
        .into_iter()
        .map(|definition| {
            let mut root = contract.clone();
            root["$ref"] = Value::String(format!("#/$defs/{}", definition.name()));
            let validator = jsonschema::options()
                .with_draft(Draft::Draft202012)
                .should_validate_formats(true)
                .build(&root)
                .unwrap_or_else(|e| panic!("contract.json {}: {e}", definition.name()));
            (definition, validator)
        })
        .collect()
});

/// Checks `value` against `definition`. Issue messages never quote the value (it may hold
/// secrets).
pub fn check(definition: Definition, value: &Value) -> Result<(), Vec<Issue>> {
    let validator = &VALIDATORS[&definition];
    // Almost every document is valid: the yes-or-no check is several times cheaper than
    // collecting errors, which only an invalid one needs.
    if validator.is_valid(value) {
        return Ok(());
    }
    let issues: Vec<Issue> = validator
        .iter_errors(value)
        .take(20)
        .flat_map(|error| issues_of(&error))
        .collect();
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

/// The issues of one error. A missing or unknown field points at the field itself (as the
/// manifest's issues do), not at the object that lacks or holds it.
fn issues_of(error: &ValidationError<'_>) -> Vec<Issue> {
    let at = error.instance_path().to_string();
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            vec![Issue::new(
                pointer(&at, name),
                format!("{name} is required"),
            )]
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| Issue::new(pointer(&at, name), format!("{name:?} is not a field here")))
            .collect(),
        _ => vec![Issue::new(at, error.masked().to_string())],
    }
}

/// Compiles every definition now (at start-up), so that a broken contract fails the process
/// instead of the first request.
pub(crate) fn compile_all() {
    LazyLock::force(&VALIDATORS);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn invoke_request() -> Value {
        json!({
            "module": "a".repeat(64),
            "app": {"name": "kyc"},
            "call": {"id": "call-1", "tenantId": "3f0b8a52-8c9e-4a7e-9d0c-2f6d7c1b5e11"},
            "action": "check",
            "config": {},
            "input": {"name": "Ada"},
            "secrets": {"API_KEY": "sk-canary"},
            "hosts": ["api.vendor.test"],
            "timeoutMs": 1000
        })
    }

    #[test]
    fn a_complete_invoke_request_passes_and_each_flaw_is_named() {
        compile_all();
        assert_eq!(check(Definition::InvokeRequest, &invoke_request()), Ok(()));
        let flaws = [
            ("/module", json!("xyz")),
            ("/timeoutMs", json!(99)),
            ("/timeoutMs", json!(60001)),
            ("/call/tenantId", json!("not-a-uuid")),
            ("/action", json!("9lives")),
        ];
        for (path, value) in flaws {
            let mut request = invoke_request();
            *request.pointer_mut(path).expect("field exists") = value;
            let issues = check(Definition::InvokeRequest, &request).expect_err(path);
            assert!(issues.iter().any(|i| i.path == path), "{path}: {issues:?}");
        }
        let mut extra = invoke_request();
        extra["colour"] = json!("red");
        let issues = check(Definition::InvokeRequest, &extra).expect_err("unknown field");
        assert!(issues.iter().any(|i| i.path == "/colour"), "{issues:?}");
        let mut missing = invoke_request();
        missing["call"]
            .as_object_mut()
            .expect("object")
            .remove("id");
        let issues = check(Definition::InvokeRequest, &missing).expect_err("missing field");
        assert!(issues.iter().any(|i| i.path == "/call/id"), "{issues:?}");
    }

    #[test]
    fn issues_never_quote_secret_values() {
        let mut request = invoke_request();
        request["secrets"]["API_KEY"] = json!(42);
        request["secrets"]["bad name"] = json!("sk-canary-2");
        let issues = check(Definition::InvokeRequest, &request).expect_err("invalid");
        let text = format!("{issues:?}");
        assert!(!text.contains("canary"), "{text}");
    }

    #[test]
    fn module_answers_follow_the_envelopes() {
        let ok = [
            (
                Definition::InvokeModuleAnswer,
                json!({"status": "ok", "output": {"a": 1}}),
            ),
            (
                Definition::InvokeModuleAnswer,
                json!({"status": "pending", "externalId": "x1"}),
            ),
            (
                Definition::InvokeModuleAnswer,
                json!({"status": "error", "message": "no", "retryable": true}),
            ),
            (
                Definition::WebhookModuleAnswer,
                json!({"status": "ignored"}),
            ),
            (
                Definition::WebhookModuleAnswer,
                json!({"status": "event", "event": {"externalId": "x", "eventId": "e", "status": "completed", "output": {}}}),
            ),
            (
                Definition::HandoffModuleAnswer,
                json!({"status": "ok", "handoff": null}),
            ),
            (
                Definition::HandoffModuleAnswer,
                json!({"status": "ok", "handoff": {"sdk": "s", "token": "t", "expiresAt": "2026-11-23T10:00:00Z"}}),
            ),
        ];
        for (definition, answer) in ok {
            assert_eq!(check(definition, &answer), Ok(()), "{answer}");
        }
        let bad = [
            (Definition::InvokeModuleAnswer, json!({"status": "ok"})),
            (
                Definition::InvokeModuleAnswer,
                json!({"status": "pending", "externalId": "x".repeat(201)}),
            ),
            (Definition::InvokeModuleAnswer, json!({"status": "done"})),
            (Definition::InvokeModuleAnswer, json!([1, 2])),
            (
                Definition::WebhookModuleAnswer,
                json!({"status": "event", "event": {"externalId": "x", "eventId": "e", "status": "weird"}}),
            ),
            (
                Definition::HandoffModuleAnswer,
                json!({"status": "ok", "handoff": {"sdk": "s", "token": "t", "expiresAt": "tomorrow"}}),
            ),
        ];
        for (definition, answer) in bad {
            assert!(check(definition, &answer).is_err(), "{answer}");
        }
    }
}
