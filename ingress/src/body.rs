//! Request bodies: size limits before anything is buffered, and JSON decoding whose failures
//! are validation issues pointing at the offending field.

use bytes::Bytes;
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;
use telemetry::request_body::{self, Refused};

use crate::error::{Error, Issue, Location};

/// Default limit of JSON bodies (SPEC leaves it open; documented in the README).
pub const JSON_LIMIT: usize = 1024 * 1024;

/// Fails with 413 when the declared length is over `limit`, after draining the body so that the
/// client, still sending it, reads the 413 instead of a reset (`telemetry::request_body`).
pub async fn refuse_declared_oversize<B>(
    headers: &HeaderMap,
    body: &mut B,
    limit: usize,
) -> Result<(), Error>
where
    B: hyper::body::Body + Unpin,
{
    request_body::refuse_declared(headers, body, limit)
        .await
        .map_err(refused)
}

/// Buffers the body, failing with 413 as soon as it passes `limit` bytes.
pub async fn read_limited<B>(headers: &HeaderMap, body: B, limit: usize) -> Result<Bytes, Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    request_body::read(headers, body, limit)
        .await
        .map_err(refused)
}

fn refused(refused: Refused) -> Error {
    match refused {
        Refused::TooLarge { limit } => Error::PayloadTooLarge { limit },
        Refused::Unreadable(why) => {
            Error::validation(Location::Body, "", format!("body could not be read: {why}"))
        }
    }
}

/// Whether the request says its body is JSON (`application/json` or `application/*+json`).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let essence = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            essence == "application/json"
                || (essence.starts_with("application/") && essence.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// Decodes a JSON body into `T`. Malformed JSON and values of the wrong shape are 400
/// `validation_error` with the JSON Pointer of the offending field.
pub fn decode_json<T: DeserializeOwned>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, Error> {
    if !is_json(headers) {
        return Err(Error::UnsupportedMediaType {
            expected: "application/json",
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let pointer = pointer_of(error.path());
        Error::Validation(vec![Issue::new(
            Location::Body,
            pointer,
            error.inner().to_string(),
        )])
    })?;
    deserializer.end().map_err(|error| {
        Error::validation(Location::Body, "", format!("trailing characters: {error}"))
    })?;
    Ok(value)
}

/// `serde_path_to_error` paths (`a.b[0]`) as JSON Pointers (`/a/b/0`).
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http::header::CONTENT_LENGTH;
    use http_body_util::Full;
    use serde::Deserialize;

    fn json_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        h
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Install {
        #[serde(rename = "versionId")]
        version_id: uuid::Uuid,
        enabled: Option<bool>,
        items: Option<Vec<u32>>,
    }

    fn first_issue(error: Error) -> Issue {
        match error {
            Error::Validation(mut issues) => issues.remove(0),
            other => panic!("expected validation error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_413_declared_or_streamed() {
        let mut headers = json_headers();
        headers.insert(CONTENT_LENGTH, HeaderValue::from(11u64));
        let declared =
            read_limited(&headers, Full::new(Bytes::from_static(b"0123456789a")), 10).await;
        assert!(matches!(
            declared,
            Err(Error::PayloadTooLarge { limit: 10 })
        ));
        // No Content-Length: the limit is enforced while reading.
        let streamed =
            read_limited(&json_headers(), Full::new(Bytes::from(vec![b'x'; 11])), 10).await;
        assert!(matches!(
            streamed,
            Err(Error::PayloadTooLarge { limit: 10 })
        ));
        let fits = read_limited(&json_headers(), Full::new(Bytes::from(vec![b'x'; 10])), 10).await;
        assert_eq!(fits.expect("fits").len(), 10);
    }

    #[test]
    fn malformed_json_is_a_body_issue() {
        let issue = first_issue(
            decode_json::<Install>(&json_headers(), b"{\"versionId\":").expect_err("must fail"),
        );
        assert_eq!(issue.location, Location::Body);
        let body = format!("{{\"versionId\":\"{}\"}} {{}}", uuid::Uuid::new_v4());
        let issue = first_issue(
            decode_json::<Install>(&json_headers(), body.as_bytes()).expect_err("must fail"),
        );
        assert!(issue.message.contains("trailing"));
    }

    #[test]
    fn shape_errors_point_at_the_field() {
        let id = uuid::Uuid::new_v4();
        let body = format!("{{\"versionId\":\"{id}\",\"items\":[1,\"two\"]}}");
        let issue = first_issue(
            decode_json::<Install>(&json_headers(), body.as_bytes()).expect_err("must fail"),
        );
        assert_eq!(issue.path, "/items/1");
        let issue = first_issue(
            decode_json::<Install>(&json_headers(), b"{\"versionId\":\"nope\"}")
                .expect_err("must fail"),
        );
        assert_eq!(issue.path, "/versionId");
        let issue = first_issue(
            decode_json::<Install>(
                &json_headers(),
                format!("{{\"versionId\":\"{id}\",\"extra\":1}}").as_bytes(),
            )
            .expect_err("must fail"),
        );
        assert!(issue.message.contains("extra"), "{}", issue.message);
    }

    #[test]
    fn non_json_content_type_is_415() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert!(matches!(
            decode_json::<Install>(&headers, b"{}"),
            Err(Error::UnsupportedMediaType { .. })
        ));
        assert!(is_json(&{
            let mut h = HeaderMap::new();
            h.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/merge-patch+json"),
            );
            h
        }));
    }
}
