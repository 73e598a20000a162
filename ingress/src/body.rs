//! Request bodies: a route's size limit is enforced on the declared length before a handler
//! runs (`service::http::body` drains an oversized body first, so the client still sending it
//! reads the 413 instead of a reset).

use http::HeaderMap;
use service::http::body::{self, Refused};

use crate::error::{Error, Location};

/// Body limit of the routes that take JSON (SPEC leaves it open; documented in the README).
pub(crate) const JSON_LIMIT: usize = 1024 * 1024;

/// The body as JSON of type `T`, at most `limit` bytes. An empty body reads as `{}`, so routes
/// whose body is all optional fields take none. A body that does not fit `T` names where; so
/// does one with U+0000 in a string: Postgres `text` and `jsonb` cannot hold it and most of a
/// body ends up in one, so it is refused here rather than failing the command that would store
/// it (one rule for every body, secret values and test inputs included).
pub(crate) async fn json<T, B>(headers: &HeaderMap, body: B, limit: usize) -> Result<T, Error>
where
    T: serde::de::DeserializeOwned,
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let bytes = read(headers, body, limit).await?;
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let parsed = serde_path_to_error::deserialize(&mut reader).map_err(|error| {
        let path = pointer_of(error.path());
        let message = error.into_inner().to_string();
        Error::validation(Location::Body, path, message)
    })?;
    refuse_nul(bytes)?;
    Ok(parsed)
}

/// A NUL arrives escaped (`\u0000`; JSON has no raw control characters in strings), so only a
/// body with that text is looked at closely.
fn refuse_nul(bytes: &[u8]) -> Result<(), Error> {
    const ESCAPED_NUL: &[u8] = b"\\u0000";
    if !bytes.windows(ESCAPED_NUL.len()).any(|w| w == ESCAPED_NUL) {
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Ok(());
    };
    match schema::storable::nul_at(&value) {
        Some(at) => Err(Error::validation(
            Location::Body,
            at,
            schema::storable::NUL_MESSAGE,
        )),
        None => Ok(()),
    }
}

/// The whole body, at most `limit` bytes; past it 413 without keeping the rest.
pub(crate) async fn read<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
) -> Result<bytes::Bytes, Error>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    body::read(headers, body, limit).await.map_err(refused)
}

/// A serde path as a JSON Pointer (`""` for the whole body).
pub(crate) fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => pointer = schema::pointer(&pointer, &index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer = schema::pointer(&pointer, key)
            }
            Segment::Unknown => {}
        }
    }
    pointer
}

fn refused(refused: Refused) -> Error {
    match refused {
        Refused::TooLarge { limit } => Error::PayloadTooLarge { limit },
        Refused::Unreadable(why) => {
            Error::validation(Location::Body, "", format!("body could not be read: {why}"))
        }
    }
}

/// Fails with 413 when the declared length is over `limit`.
pub(crate) async fn refuse_declared_oversize<B>(
    headers: &HeaderMap,
    body: &mut B,
    limit: usize,
) -> Result<(), Error>
where
    B: hyper::body::Body + Unpin,
{
    body::refuse_declared(headers, body, limit)
        .await
        .map_err(refused)
}

#[cfg(test)]
mod tests {
    use http_body_util::Full;
    use serde_json::{Value, json};

    use super::*;

    async fn parsed(text: &str) -> Result<Value, Error> {
        let body = Full::new(bytes::Bytes::from(text.to_owned()));
        json(&HeaderMap::new(), body, JSON_LIMIT).await
    }

    #[tokio::test]
    async fn a_nul_in_any_string_is_refused_with_its_path() {
        match parsed(r#"{"config": {"note": ["ok", "a\u0000b"]}}"#).await {
            Err(Error::Validation(issues)) => {
                assert_eq!(issues[0].path, "/config/note/1");
                assert_eq!(issues[0].message, schema::storable::NUL_MESSAGE);
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_escaped_backslash_before_u0000_is_plain_text() {
        assert_eq!(
            parsed(r#"{"note": "C:\\u0000"}"#).await.expect("taken"),
            json!({ "note": "C:\\u0000" })
        );
        assert_eq!(parsed("").await.expect("empty"), json!({}));
    }
}
