//! The webhook as its module reads it (runner contract `webhookRequest.request`): the method,
//! the headers normalised, the query, and the raw body in base64. Vendors send what they send,
//! so normalising never fails the call: names are lower-case (hyper already holds them so),
//! repeated headers are joined with `, ` as RFC 9110 reads them, and a header the contract
//! cannot carry (a name over 100 characters, a value over 8 KiB or not text) is dropped.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::HeaderMap;
use serde_json::{Map, Value, json};

/// Longest header name the contract carries.
const MAX_NAME: usize = 100;
/// Longest header value the contract carries, repeats joined.
const MAX_VALUE: usize = 8192;

/// The `request` object of a `handle_webhook` call.
pub(super) fn of(
    method: &http::Method,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Value {
    json!({
        "method": method.as_str(),
        "headers": normalised(headers),
        "query": query_of(query),
        "bodyBase64": BASE64.encode(body),
    })
}

fn normalised(headers: &HeaderMap) -> Map<String, Value> {
    let mut joined: BTreeMap<&str, Option<String>> = BTreeMap::new();
    for (name, value) in headers {
        let name = name.as_str();
        if name.len() > MAX_NAME {
            continue;
        }
        let slot = joined.entry(name).or_insert_with(|| Some(String::new()));
        let Some(text) = slot else { continue };
        match value.to_str() {
            Ok(value) => {
                if !text.is_empty() {
                    text.push_str(", ");
                }
                text.push_str(value);
                if text.len() > MAX_VALUE {
                    *slot = None;
                }
            }
            // Not visible ASCII: the module could not read it as the vendor meant it anyway.
            Err(_) => *slot = None,
        }
    }
    joined
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), Value::String(value?))))
        .collect()
}

/// Each parameter once: a string, or an array of strings when it was repeated.
fn query_of(raw: Option<&str>) -> Map<String, Value> {
    let mut query: Map<String, Value> = Map::new();
    for (name, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        let value = Value::String(value.into_owned());
        match query.get_mut(name.as_ref()) {
            None => {
                query.insert(name.into_owned(), value);
            }
            Some(Value::Array(values)) => values.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
        }
    }
    query
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use http::header::HeaderName;

    use super::*;

    #[test]
    fn repeated_headers_are_joined_and_unfit_ones_dropped_without_failing() {
        let mut headers = HeaderMap::new();
        headers.append("x-vendor-signature", HeaderValue::from_static("abc"));
        headers.append("accept", HeaderValue::from_static("a/b"));
        headers.append("accept", HeaderValue::from_static("c/d"));
        let long_name = HeaderName::from_bytes("x".repeat(101).as_bytes()).expect("name");
        headers.append(long_name, HeaderValue::from_static("dropped"));
        headers.append(
            "x-long",
            HeaderValue::from_str(&"v".repeat(8193)).expect("value"),
        );
        headers.append(
            "x-binary",
            HeaderValue::from_bytes(b"caf\xe9").expect("value"),
        );
        let request = of(
            &http::Method::POST,
            &headers,
            Some("a=1&b=2&a=3&c"),
            b"{\"k\":1}",
        );
        assert_eq!(
            request["headers"],
            json!({"accept": "a/b, c/d", "x-vendor-signature": "abc"})
        );
        assert_eq!(
            request["query"],
            json!({"a": ["1", "3"], "b": "2", "c": ""})
        );
        assert_eq!(request["method"], "POST");
        assert_eq!(request["bodyBase64"], "eyJrIjoxfQ==");
    }
}
