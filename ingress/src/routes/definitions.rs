//! Versioned definitions (docs/definitions-and-runs.md; SPEC shows only their kinds and keys):
//! `POST /definitions/:kind/:key/versions` (the body is the definition; answers 201 with the
//! version, numbered by the definitions stage), `GET /definitions/:kind/:key` (the key and its
//! versions), `GET /definitions/:kind/:key/versions/:version` (one in full) and
//! `POST /definitions/:kind/:key/versions/:version/publish` with an optional `{comment}` (200
//! with the version and the warnings of its checks; 202 with the approval request as well when
//! the tenant's approval settings require approval for the kind; 400 when an app rule calls an
//! asynchronous action).

use http::{Response, StatusCode};
use serde_json::Value;
use service::http::{Body as HttpBody, response};
use topics::definitions::{Body, CreateVersion, Kind, Publish, PublishReply, is_key};

use crate::body;
use crate::call::Call;
use crate::commands;
use crate::comment;
use crate::error::{Error, Issue, Location};

pub(crate) async fn create_version(call: Call<'_>) -> Result<Response<HttpBody>, Error> {
    let (state, origin, kind, key) = (
        call.state,
        call.origin(),
        call.param("kind"),
        call.param("key"),
    );
    let (kind, key) = (kind_of(kind)?, key_of(key)?);
    let mut value: Value = call.json().await?;
    let mut issues = Vec::new();
    refused_members(&mut value, "", &mut issues);
    if !issues.is_empty() {
        return Err(Error::Validation(issues));
    }
    let parsed = Body::parse(kind, value).map_err(|error| {
        let path = body::pointer_of(error.path());
        Error::validation(Location::Body, path, error.into_inner().to_string())
    })?;
    let problems = parsed.problems();
    if !problems.is_empty() {
        let issues = problems
            .into_iter()
            .map(|(path, message)| Issue::new(Location::Body, path, message))
            .collect();
        return Err(Error::Validation(issues));
    }
    // The version keeps the body as read, in the reader's own spelling of it.
    let body = serde_json::to_value(&parsed)
        .map_err(|error| Error::Internal(format!("a definition body: {error}")))?;
    let command = CreateVersion {
        kind,
        key: key.to_owned(),
        body,
    };
    let created = commands::submit(&state.commands, origin, command).await?;
    Ok(response::json(StatusCode::CREATED, &created))
}

/// What the body's reader (`Body::parse`) would take though the document refuses it, refused
/// where it stands:
/// - a member given as `null`, which the reader takes as left out (the document types every
///   member without `null`, but for a condition's `value` and what an `input` object holds,
///   which are any JSON);
/// - a member beside `rule` in a named rule entry, which it ignores (`{rule}` takes no other);
/// - a `type` that is not a string, which it reads as the variant of that index;
/// - an array where a condition (`failWhen`, `when`) or a rule entry is an object, which it
///   reads as the object's fields in order.
///
/// And what it refuses though the document allows it: a step's `slaHours` written with a zero
/// fraction (`24.0`, an `integer` to the document) is handed to it as the integer.
fn refused_members(value: &mut Value, at: &str, issues: &mut Vec<Issue>) {
    match value {
        Value::Object(members) => {
            if members.contains_key("rule") && !members.contains_key("type") {
                for name in members.keys().filter(|name| *name != "rule") {
                    let message = format!("unknown field `{name}`: a named rule entry is {{rule}}");
                    issues.push(Issue::new(
                        Location::Body,
                        schema::pointer(at, name),
                        message,
                    ));
                }
            }
            for (name, member) in members.iter_mut() {
                let pointer = schema::pointer(at, name);
                match (name.as_str(), &*member) {
                    ("value", _) => {}
                    (_, Value::Null) => {
                        issues.push(Issue::new(Location::Body, pointer, body::NULL_MESSAGE));
                    }
                    ("input", _) => {}
                    ("failWhen" | "when", member) if !member.is_object() => {
                        issues.push(Issue::new(Location::Body, pointer, body::OBJECT_MESSAGE));
                    }
                    ("rules", Value::Array(entries)) if entries.iter().any(|e| !e.is_object()) => {
                        for (index, entry) in entries.iter().enumerate() {
                            if !entry.is_object() {
                                let at = schema::pointer(&pointer, &index.to_string());
                                issues.push(Issue::new(Location::Body, at, body::OBJECT_MESSAGE));
                            }
                        }
                    }
                    ("type", Value::String(_)) => {}
                    ("type", _) => {
                        issues.push(Issue::new(Location::Body, pointer, "must be a string"));
                    }
                    ("slaHours", Value::Number(number)) => {
                        if let Some(whole) = number
                            .as_f64()
                            .filter(|f| number.as_u64().is_none() && f.fract() == 0.0)
                            .filter(|f| (0.0..=f64::from(u32::MAX)).contains(f))
                        {
                            *member = Value::from(whole as u64);
                        }
                    }
                    _ => refused_members(member, &pointer, issues),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                refused_members(item, &schema::pointer(at, &index.to_string()), issues);
            }
        }
        _ => {}
    }
}

pub(crate) async fn get(call: Call<'_>) -> Result<Response<HttpBody>, Error> {
    let (state, principal, kind, key) = (
        call.state,
        call.principal,
        call.param("kind"),
        call.param("key"),
    );
    let (kind, key) = (kind_of(kind)?, key_of(key)?);
    let mut connection = state.reads.connection().await?;
    let tenant = readers::Tenant::new(principal.tenant);
    let definition = readers::definitions::get(&mut connection, tenant, kind.as_str(), key)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &definition))
}

pub(crate) async fn get_version(call: Call<'_>) -> Result<Response<HttpBody>, Error> {
    let (state, principal, kind, key, version) = (
        call.state,
        call.principal,
        call.param("kind"),
        call.param("key"),
        call.param("version"),
    );
    let (kind, key, version) = (kind_of(kind)?, key_of(key)?, version_of(version)?);
    let tenant = readers::Tenant::new(principal.tenant);
    let found =
        readers::definitions::version(&state.reads.pool, tenant, kind.as_str(), key, version)
            .await?
            .ok_or(Error::NotFound)?;
    Ok(response::json(StatusCode::OK, &found))
}

pub(crate) async fn publish(call: Call<'_>) -> Result<Response<HttpBody>, Error> {
    let (state, origin, kind, key, version) = (
        call.state,
        call.origin(),
        call.param("kind"),
        call.param("key"),
        call.param("version"),
    );
    let (kind, key, version) = (kind_of(kind)?, key_of(key)?, version_of(version)?);
    // The optional body is the approval request's comment, should one open.
    let comment = comment::read(call).await?;
    let command = Publish {
        kind,
        key: key.to_owned(),
        version,
        comment,
    };
    Ok(
        match commands::submit(&state.commands, origin, command).await? {
            PublishReply::Published(published) => response::json(StatusCode::OK, &published),
            PublishReply::Requested(requested) => response::json(StatusCode::ACCEPTED, &requested),
        },
    )
}

fn kind_of(kind: &str) -> Result<Kind, Error> {
    Kind::parse(kind).ok_or_else(|| {
        Error::validation(
            Location::Path,
            "kind",
            "must be one of workflow, rule, rule_set, collection_flow",
        )
    })
}

fn key_of(key: &str) -> Result<&str, Error> {
    if is_key(key) {
        Ok(key)
    } else {
        Err(Error::validation(
            Location::Path,
            "key",
            "must be 1 to 100 lowercase letters, digits, '_' or '-', starting with a letter or digit",
        ))
    }
}

fn version_of(version: &str) -> Result<i32, Error> {
    version
        .parse::<i32>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| Error::validation(Location::Path, "version", "must be an integer > 0"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused_paths(mut value: Value) -> Vec<String> {
        let mut issues = Vec::new();
        refused_members(&mut value, "", &mut issues);
        issues.into_iter().map(|issue| issue.path).collect()
    }

    #[test]
    fn a_member_given_as_null_is_refused_where_it_stands() {
        let body = json!({"steps": [
            {"id": "screen", "type": "rule_set", "outputKey": null, "rules": [
                {"type": "field", "path": "score", "failWhen": {"op": "eq", "value": null}},
            ]},
            {"id": "call", "type": "call_app", "app": "kyc", "action": "check",
             "input": {"name": null}, "inputMapping": {"name": null}},
        ]});
        assert_eq!(
            refused_paths(body),
            vec!["/steps/0/outputKey", "/steps/1/inputMapping/name"]
        );
        assert!(refused_paths(json!({"workflow": "onboarding"})).is_empty());
        assert_eq!(
            refused_paths(json!({"rules": [{"rule": "pep", "x": 1}, {"rule": "sanctions"}]})),
            vec!["/rules/0/x"]
        );
        assert_eq!(
            refused_paths(json!({"rules": [["pep"], {"type": "field", "failWhen": ["eq"]}]})),
            vec!["/rules/0"]
        );
        assert_eq!(
            refused_paths(json!({"rules": [{"type": "field", "failWhen": ["eq"]}]})),
            vec!["/rules/0/failWhen"]
        );
        assert_eq!(
            refused_paths(json!({"steps": [{"input": null}]})),
            vec!["/steps/0/input"]
        );
        assert_eq!(
            refused_paths(
                json!({"rules": [{"type": 0, "path": "a", "failWhen": {"op": "exists"}}]})
            ),
            vec!["/rules/0/type"]
        );
    }

    #[test]
    fn a_whole_sla_is_handed_on_as_an_integer() {
        let mut body =
            json!({"steps": [{"type": "open_case", "slaHours": 24.0}, {"slaHours": 2.5}]});
        let mut issues = Vec::new();
        refused_members(&mut body, "", &mut issues);
        assert!(issues.is_empty());
        assert_eq!(
            body,
            json!({"steps": [{"type": "open_case", "slaHours": 24}, {"slaHours": 2.5}]})
        );
    }
}
