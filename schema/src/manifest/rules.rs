//! The manifest rules a JSON Schema cannot express.

use std::collections::HashSet;

use serde_json::Value;
use url::Url;

use crate::issue::pointer;
use crate::{Issue, host, storable, strict};

/// The rules the schema cannot express. They read `value` defensively, so they also run on a
/// manifest with shape issues and report their own issues alongside.
pub(super) fn check(value: &Value, issues: &mut Vec<Issue>) {
    if let Some(at) = storable::nul_at(value) {
        issues.push(Issue::new(at, storable::NUL_MESSAGE));
    }
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
                && let Err(message) = host::check_entry(host)
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
        && let Err(found) = strict::compile(schema, at)
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
