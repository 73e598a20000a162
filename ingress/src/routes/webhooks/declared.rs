//! The ids of a webhook read where its app declares them, without running any module:
//!
//! - the external id (SPEC §4.8 step 1, §2.8 `handles.webhookExternalId`): the URL's
//!   `?externalId=`, else where the publisher's newest published version declares it;
//! - the event id (`handles.webhookEventId`, beyond SPEC: README "Vendor webhooks"), where the
//!   session's version declares it, so a repeated delivery can be answered before its module
//!   runs.
//!
//! A place is a JSON Pointer into a JSON body, a header, or a query parameter. A number where
//! an id should be counts as its decimal text (vendors send both); an empty id is none.

use http::HeaderMap;
use serde_json::Value;

/// The external id of a webhook, if it has one.
pub(super) fn external_id(
    declared: Option<&Value>,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Option<String> {
    if let Some(id) = query_param(query, "externalId") {
        return Some(id);
    }
    at(declared?, headers, query, body)
}

/// The event id of a webhook, when the session's version (`manifest`) declares where it is.
pub(super) fn event_id(
    manifest: &Value,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Option<String> {
    let declared = &manifest["handles"]["webhookEventId"];
    if declared.is_null() {
        return None;
    }
    at(declared, headers, query, body)
}

/// The value at the declared place.
fn at(declared: &Value, headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> Option<String> {
    let found = if let Some(pointer) = declared["json"].as_str() {
        let body: Value = serde_json::from_slice(body).ok()?;
        match body.pointer(pointer)? {
            Value::String(id) => Some(id.clone()),
            Value::Number(id) => Some(id.to_string()),
            _ => None,
        }
    } else if let Some(name) = declared["header"].as_str() {
        headers.get(name)?.to_str().ok().map(str::to_owned)
    } else if let Some(name) = declared["query"].as_str() {
        query_param(query, name)
    } else {
        None
    };
    found.filter(|id| !id.is_empty())
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
        assert_eq!(
            event_id(&declared, &headers, None, b"{}").as_deref(),
            Some("e-1")
        );
        let silent = json!({"handles": {"webhook": true}});
        assert_eq!(event_id(&silent, &headers, None, b"{}"), None);
    }

    #[test]
    fn the_url_wins_then_the_declared_place_is_read() {
        let body = br#"{"data": {"session": "s-1", "n": 42, "o": {}}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("x-session", HeaderValue::from_static("h-1"));
        let json_at = |p: &str| json!({"json": p});
        assert_eq!(
            external_id(
                Some(&json_at("/data/session")),
                &headers,
                Some("externalId=u-1"),
                body
            )
            .as_deref(),
            Some("u-1")
        );
        assert_eq!(
            external_id(Some(&json_at("/data/session")), &headers, None, body).as_deref(),
            Some("s-1")
        );
        assert_eq!(
            external_id(Some(&json_at("/data/n")), &headers, None, body).as_deref(),
            Some("42")
        );
        assert_eq!(
            external_id(Some(&json_at("/data/o")), &headers, None, body),
            None
        );
        assert_eq!(
            external_id(Some(&json_at("/data/session")), &headers, None, b"not json"),
            None
        );
        assert_eq!(
            external_id(Some(&json!({"header": "x-session"})), &headers, None, body).as_deref(),
            Some("h-1")
        );
        assert_eq!(
            external_id(
                Some(&json!({"query": "sid"})),
                &headers,
                Some("sid=q-1"),
                body
            )
            .as_deref(),
            Some("q-1")
        );
        assert_eq!(external_id(None, &headers, Some("externalId="), body), None);
        assert_eq!(external_id(None, &headers, None, body), None);
    }
}
