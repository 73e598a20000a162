//! The ids of a webhook read where its app declares them, without running any module:
//!
//! - the external id (SPEC §4.8 step 1, §2.8 `handles.webhookExternalId`): the URL's
//!   `?externalId=`, else where the publisher's newest published version declares it;
//! - the event id (`handles.webhookEventId`, beyond SPEC: README "Vendor webhooks"), where the
//!   session's version declares it, so a repeated delivery can be answered before its module
//!   runs.
//!
//! A place is a JSON Pointer into a JSON body (parsed once per webhook, whatever is read), a
//! header, or a query parameter. A number where an id should be counts as its decimal text
//! (vendors send both); an empty id is none.

use std::sync::OnceLock;

use http::HeaderMap;
use serde_json::Value;

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

    /// The external id: the URL's, else the one at `declared`.
    pub(super) fn external_id(&self, declared: Option<&Value>) -> Option<String> {
        if let Some(id) = query_param(self.query, "externalId") {
            return Some(id);
        }
        self.at(declared?)
    }

    /// The event id, when the session's version (`manifest`) declares where it is.
    pub(super) fn event_id(&self, manifest: &Value) -> Option<String> {
        let declared = &manifest["handles"]["webhookEventId"];
        if declared.is_null() {
            return None;
        }
        self.at(declared)
    }

    /// The value at the declared place.
    fn at(&self, declared: &Value) -> Option<String> {
        let found = if let Some(pointer) = declared["json"].as_str() {
            let body = self
                .json
                .get_or_init(|| serde_json::from_slice(self.body).ok())
                .as_ref()?;
            match body.pointer(pointer)? {
                Value::String(id) => Some(id.clone()),
                Value::Number(id) => Some(id.to_string()),
                _ => None,
            }
        } else if let Some(name) = declared["header"].as_str() {
            self.headers.get(name)?.to_str().ok().map(str::to_owned)
        } else if let Some(name) = declared["query"].as_str() {
            query_param(self.query, name)
        } else {
            None
        };
        found.filter(|id| !id.is_empty())
    }
}

/// The first non-empty value of query parameter `name`.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(key, value)| key == name && !value.is_empty())
        .map(|(_, value)| value.into_owned())
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
    fn the_url_wins_then_the_declared_place_is_read() {
        let body = br#"{"data": {"session": "s-1", "n": 42, "o": {}}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("x-session", HeaderValue::from_static("h-1"));
        let json_at = |p: &str| json!({"json": p});
        assert_eq!(
            Arrived::new(&headers, Some("externalId=u-1"), body)
                .external_id(Some(&json_at("/data/session")))
                .as_deref(),
            Some("u-1")
        );
        assert_eq!(
            Arrived::new(&headers, None, body)
                .external_id(Some(&json_at("/data/session")))
                .as_deref(),
            Some("s-1")
        );
        assert_eq!(
            Arrived::new(&headers, None, body)
                .external_id(Some(&json_at("/data/n")))
                .as_deref(),
            Some("42")
        );
        assert_eq!(
            Arrived::new(&headers, None, body).external_id(Some(&json_at("/data/o"))),
            None
        );
        assert_eq!(
            Arrived::new(&headers, None, b"not json").external_id(Some(&json_at("/data/session"))),
            None
        );
        assert_eq!(
            Arrived::new(&headers, None, body)
                .external_id(Some(&json!({"header": "x-session"})))
                .as_deref(),
            Some("h-1")
        );
        assert_eq!(
            Arrived::new(&headers, Some("sid=q-1"), body)
                .external_id(Some(&json!({"query": "sid"})))
                .as_deref(),
            Some("q-1")
        );
        assert_eq!(
            Arrived::new(&headers, Some("externalId="), body).external_id(None),
            None
        );
        assert_eq!(Arrived::new(&headers, None, body).external_id(None), None);
    }
}
