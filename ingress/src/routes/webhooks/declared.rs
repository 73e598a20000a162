//! The ids of a webhook read where its app declares them, without running any module:
//!
//! - the external id (SPEC §4.8 step 1, §2.8 `handles.webhookExternalId`): the URL's
//!   `?externalId=`, else where the publisher's newest published version declares it;
//! - the event id (`handles.webhookEventId`, beyond SPEC: docs/vendor-webhooks.md), where the
//!   session's version declares it, so a repeated delivery can be answered before its module
//!   runs.
//!
//! A place is a JSON Pointer into a JSON body (parsed once per webhook, whatever is read), a
//! header, or a query parameter. A number where an id should be counts as its decimal text
//! (vendors send both); an empty id is none.
//!
//! An external id is what a module answered `pending` with (1 to 200 characters, contract
//! `invokeAnswer`): one longer, or holding U+0000 (which no `text` column holds), names no
//! session and is refused with 400 `validation_error` at the place it was read, as is a query
//! parameter given twice, before anything is looked up.

use std::borrow::Cow;
use std::sync::OnceLock;

use http::HeaderMap;
use serde_json::Value;

use crate::error::{Error, Location};

/// Longest id a session can have (contract `invokeAnswer`: `externalId` at most 200).
const MAX_ID_CHARS: usize = 200;

/// An id and where it was read.
struct Read {
    id: String,
    location: Location,
    /// The parameter or header name, or the JSON Pointer.
    name: String,
}

/// A webhook as it arrived, its body read as JSON at most once whatever is asked of it.
pub(super) struct Arrived<'a> {
    headers: &'a HeaderMap,
    query: Option<&'a str>,
    body: &'a [u8],
    json: OnceLock<Option<Value>>,
}

impl<'a> Arrived<'a> {
    pub(super) fn new(headers: &'a HeaderMap, query: Option<&'a str>, body: &'a [u8]) -> Self {
        Self {
            headers,
            query,
            body,
            json: OnceLock::new(),
        }
    }

    /// The URL's external id (`?externalId=`), when it has one.
    pub(super) fn url_external_id(&self) -> Result<Option<String>, Error> {
        self.query_value("externalId")?.map(checked).transpose()
    }

    /// The external id at `declared`, the place the publisher's version names.
    pub(super) fn declared_external_id(&self, declared: &Value) -> Result<Option<String>, Error> {
        self.at(declared)?.map(checked).transpose()
    }

    /// The event id, when the session's version (`manifest`) declares where it is. One that
    /// cannot be read, or is no id, is none here: the module reads the event itself, and what
    /// it answers is checked before anything is recorded.
    pub(super) fn event_id(&self, manifest: &Value) -> Option<String> {
        let declared = &manifest["handles"]["webhookEventId"];
        if declared.is_null() {
            return None;
        }
        self.at(declared).ok()?.and_then(|read| checked(read).ok())
    }

    /// The value at the declared place.
    fn at(&self, declared: &Value) -> Result<Option<Read>, Error> {
        if let Some(pointer) = declared["json"].as_str() {
            return Ok(self.json_value(pointer).map(|id| Read {
                id,
                location: Location::Body,
                name: pointer.to_owned(),
            }));
        }
        if let Some(name) = declared["header"].as_str() {
            let value = self.headers.get(name).and_then(|v| v.to_str().ok());
            return Ok(value.filter(|id| !id.is_empty()).map(|id| Read {
                id: id.to_owned(),
                location: Location::Header,
                name: name.to_owned(),
            }));
        }
        if let Some(name) = declared["query"].as_str() {
            return self.query_value(name);
        }
        Ok(None)
    }

    /// The string or number at `pointer` in the JSON body.
    fn json_value(&self, pointer: &str) -> Option<String> {
        let body = self
            .json
            .get_or_init(|| serde_json::from_slice(self.body).ok())
            .as_ref()?;
        let id = match body.pointer(pointer)? {
            Value::String(id) => id.clone(),
            Value::Number(id) => id.to_string(),
            _ => return None,
        };
        (!id.is_empty()).then_some(id)
    }

    /// The value of query parameter `name`, none when empty; given twice (even empty) is 400.
    fn query_value(&self, name: &str) -> Result<Option<Read>, Error> {
        let Some(query) = self.query else {
            return Ok(None);
        };
        let mut values = form_urlencoded::parse(query.as_bytes())
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value);
        let first = values.next();
        if values.next().is_some() {
            return Err(Error::validation(
                Location::Query,
                name,
                "must be given at most once",
            ));
        }
        Ok(first
            .filter(|id| !id.is_empty())
            .map(|id: Cow<'_, str>| Read {
                id: id.into_owned(),
                location: Location::Query,
                name: name.to_owned(),
            }))
    }
}

/// The id read, when it is one a session can have; else 400 at the place it was read.
fn checked(read: Read) -> Result<String, Error> {
    if read.id.chars().count() > MAX_ID_CHARS || read.id.contains('\0') {
        return Err(Error::validation(
            read.location,
            read.name,
            format!("must be 1 to {MAX_ID_CHARS} characters, without U+0000"),
        ));
    }
    Ok(read.id)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_event_id_is_read_only_where_the_version_declares_it() {
        let mut headers = HeaderMap::new();
        headers.insert("x-event", HeaderValue::from_static("e-1"));
        let declared =
            json!({"handles": {"webhook": true, "webhookEventId": {"header": "x-event"}}});
        let arrived = Arrived::new(&headers, None, b"{}");
        assert_eq!(arrived.event_id(&declared).as_deref(), Some("e-1"));
        let silent = json!({"handles": {"webhook": true}});
        assert_eq!(arrived.event_id(&silent), None);
    }

    #[test]
    fn ids_are_read_from_the_url_or_the_declared_place() {
        let body = br#"{"data": {"session": "s-1", "n": 42, "o": {}}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("x-session", HeaderValue::from_static("h-1"));
        let url = |query: &str| {
            Arrived::new(&headers, Some(query), body)
                .url_external_id()
                .expect("an id or none")
        };
        assert_eq!(url("externalId=u-1").as_deref(), Some("u-1"));
        assert_eq!(url("externalId="), None);
        assert_eq!(url("other=1"), None);
        let at = |query: Option<&str>, body: &[u8], declared: Value| {
            Arrived::new(&headers, query, body)
                .declared_external_id(&declared)
                .expect("an id or none")
        };
        let json_at = |p: &str| json!({"json": p});
        assert_eq!(
            at(None, body, json_at("/data/session")).as_deref(),
            Some("s-1")
        );
        assert_eq!(at(None, body, json_at("/data/n")).as_deref(), Some("42"));
        assert_eq!(at(None, body, json_at("/data/o")), None);
        assert_eq!(at(None, b"not json", json_at("/data/session")), None);
        assert_eq!(
            at(None, body, json!({"header": "x-session"})).as_deref(),
            Some("h-1")
        );
        assert_eq!(
            at(Some("sid=q-1"), body, json!({"query": "sid"})).as_deref(),
            Some("q-1")
        );
        assert_eq!(at(None, body, json!({"nowhere": true})), None);
    }

    /// The issue a refused id is answered with: where, and at which name.
    fn refusal(error: Error) -> (Location, String) {
        match error {
            Error::Validation(issues) => {
                let [issue] = issues.as_slice() else {
                    panic!("one issue: {issues:?}")
                };
                (issue.location, issue.path.clone())
            }
            other => panic!("a validation error, not {other:?}"),
        }
    }

    #[test]
    fn an_id_no_session_can_have_is_refused_where_it_was_read() {
        let headers = HeaderMap::new();
        let refused = |query: &str| {
            refusal(
                Arrived::new(&headers, Some(query), b"")
                    .url_external_id()
                    .expect_err("refused"),
            )
        };
        let query = (Location::Query, "externalId".to_owned());
        assert_eq!(refused("externalId=%00"), query);
        assert_eq!(refused("externalId=a%00b"), query);
        assert_eq!(refused(&format!("externalId={}", "x".repeat(201))), query);
        assert_eq!(refused("externalId=a&externalId=b"), query);
        assert_eq!(refused("externalId=a&externalId="), query);
        let longest = format!("externalId={}", "é".repeat(200));
        assert!(
            Arrived::new(&headers, Some(&longest), b"")
                .url_external_id()
                .expect("200 characters are an id")
                .is_some()
        );

        let body = br#"{"data": {"session": "a\u0000b"}}"#;
        let declared = json!({"json": "/data/session"});
        let arrived = Arrived::new(&headers, None, body);
        assert_eq!(
            refusal(
                arrived
                    .declared_external_id(&declared)
                    .expect_err("refused")
            ),
            (Location::Body, "/data/session".to_owned())
        );
        let declared_query = json!({"query": "sid"});
        let twice = Arrived::new(&headers, Some("sid=1&sid=2"), b"");
        assert_eq!(
            refusal(
                twice
                    .declared_external_id(&declared_query)
                    .expect_err("refused")
            ),
            (Location::Query, "sid".to_owned())
        );
        // An event id that is no id is only not read here.
        let manifest = json!({"handles": {"webhookEventId": {"json": "/data/session"}}});
        assert_eq!(arrived.event_id(&manifest), None);
    }
}
