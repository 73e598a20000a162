//! Where a webhook's external id is (SPEC §4.8 step 1, §2.8 `handles.webhookExternalId`): the
//! URL's `?externalId=`, else where the publisher's newest published version declares it: a
//! JSON Pointer into a JSON body, a header, or a query parameter. No module code runs to find
//! it. A number where the id should be counts as its decimal text (vendors send both).

use http::HeaderMap;
use serde_json::Value;

/// The external id of a webhook, if it has one.
pub(super) fn read(
    declared: Option<&Value>,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Option<String> {
    if let Some(id) = query_param(query, "externalId") {
        return Some(id);
    }
    let declared = declared?;
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
    fn the_url_wins_then_the_declared_place_is_read() {
        let body = br#"{"data": {"session": "s-1", "n": 42, "o": {}}}"#;
        let mut headers = HeaderMap::new();
        headers.insert("x-session", HeaderValue::from_static("h-1"));
        let json_at = |p: &str| json!({"json": p});
        assert_eq!(
            read(
                Some(&json_at("/data/session")),
                &headers,
                Some("externalId=u-1"),
                body
            )
            .as_deref(),
            Some("u-1")
        );
        assert_eq!(
            read(Some(&json_at("/data/session")), &headers, None, body).as_deref(),
            Some("s-1")
        );
        assert_eq!(
            read(Some(&json_at("/data/n")), &headers, None, body).as_deref(),
            Some("42")
        );
        assert_eq!(read(Some(&json_at("/data/o")), &headers, None, body), None);
        assert_eq!(
            read(Some(&json_at("/data/session")), &headers, None, b"not json"),
            None
        );
        assert_eq!(
            read(Some(&json!({"header": "x-session"})), &headers, None, body).as_deref(),
            Some("h-1")
        );
        assert_eq!(
            read(
                Some(&json!({"query": "sid"})),
                &headers,
                Some("sid=q-1"),
                body
            )
            .as_deref(),
            Some("q-1")
        );
        assert_eq!(read(None, &headers, Some("externalId="), body), None);
        assert_eq!(read(None, &headers, None, body), None);
    }
}
