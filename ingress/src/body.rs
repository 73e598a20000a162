//! Request bodies: a route's size limit is enforced on the declared length before a handler
//! runs (`service::http::body` drains an oversized body first, so the client still sending it
//! reads the 413 instead of a reset).

use http::HeaderMap;
use serde::Deserialize;
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
    let opening = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if opening != Some(&b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
        // Every route's body is an object; serde would read a struct from an array too (its
        // fields in order), which the document does not allow.
        return Err(Error::validation(Location::Body, "", OBJECT_MESSAGE));
    }
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let parsed = serde_path_to_error::deserialize(&mut reader).map_err(|error| {
        let path = pointer_of(error.path());
        let message = error.into_inner().to_string();
        Error::validation(Location::Body, path, message)
    })?;
    refuse_nul(bytes)?;
    Ok(parsed)
}

/// A record id in a body: a UUID in the hyphenated form (`format: uuid`), not the simple,
/// braced or URN forms `Uuid`'s own reader also takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Id(pub(crate) uuid::Uuid);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        crate::path::uuid(&text).map(Id).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{text:?} is not a UUID such as 0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80"
            ))
        })
    }
}

/// An optional field that, when given, is a value: `null` is refused (`must not be null`)
/// rather than read as the field left out, since the document types the field without null.
/// Use with `#[serde(default, deserialize_with = "body::given")]` on an `Option<T>`.
pub(crate) fn given<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    match Option::<T>::deserialize(deserializer)? {
        Some(value) => Ok(Some(value)),
        None => Err(serde::de::Error::custom(NULL_MESSAGE)),
    }
}

/// What a body, or a member the document gives as an object, that is other JSON is refused with.
pub(crate) const OBJECT_MESSAGE: &str = "must be a JSON object";

/// A member the document gives as an object: read from a JSON object only, not from the array
/// of its fields in order that serde would also take for a struct.
/// Use with `#[serde(deserialize_with = "body::object")]`.
pub(crate) fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let members = serde_json::Map::deserialize(deserializer)
        .map_err(|_| serde::de::Error::custom(OBJECT_MESSAGE))?;
    T::deserialize(serde_json::Value::Object(members)).map_err(serde::de::Error::custom)
}

/// What [`given`] and [`given_whole`] answer for a `null`.
pub(crate) const NULL_MESSAGE: &str = "must not be null: leave the field out instead";

/// An integer field: a JSON number without a fraction, `24` or `24.0` alike, as JSON Schema's
/// `integer` (the document's type) counts both; `24.5`, or a value out of `T`'s range, is
/// refused. The manifest's integers read the same way (`schema::manifest`).
/// Use with `#[serde(deserialize_with = "body::whole")]`.
pub(crate) fn whole<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    whole_of(&serde_json::Number::deserialize(deserializer)?)
}

/// [`whole`] for an optional field, refusing `null` as [`given`] does.
/// Use with `#[serde(default, deserialize_with = "body::given_whole")]` on an `Option<T>`.
pub(crate) fn given_whole<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    match Option::<serde_json::Number>::deserialize(deserializer)? {
        Some(number) => whole_of(&number).map(Some),
        None => Err(serde::de::Error::custom(NULL_MESSAGE)),
    }
}

fn whole_of<T, E>(number: &serde_json::Number) -> Result<T, E>
where
    T: TryFrom<i64>,
    E: serde::de::Error,
{
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    let whole = number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && (-LIMIT..LIMIT).contains(f))
            .map(|f| f as i64)
    });
    whole
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| E::custom(format!("{number} is not an integer in range")))
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

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Typed {
        #[serde(default, deserialize_with = "given")]
        id: Option<Id>,
        #[serde(default, deserialize_with = "given_whole")]
        version: Option<i32>,
        #[serde(default = "one", deserialize_with = "whole")]
        hours: u32,
        #[serde(default, deserialize_with = "object")]
        sample: Sample,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        #[serde(default)]
        limit: u32,
    }

    fn one() -> u32 {
        1
    }

    async fn typed(text: &str) -> Result<Typed, Vec<(String, String)>> {
        let body = Full::new(bytes::Bytes::from(text.to_owned()));
        json(&HeaderMap::new(), body, JSON_LIMIT)
            .await
            .map_err(|error| match error {
                Error::Validation(issues) => issues
                    .into_iter()
                    .map(|issue| (issue.path, issue.message))
                    .collect(),
                other => panic!("expected a validation error, got {other:?}"),
            })
    }

    #[tokio::test]
    async fn an_optional_field_is_left_out_or_given_never_null() {
        let absent = typed("{}").await.expect("absent");
        assert_eq!((absent.id, absent.version, absent.hours), (None, None, 1));
        let id = "0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80";
        let given = typed(&format!(r#"{{"id": "{id}", "version": 3}}"#))
            .await
            .expect("given");
        assert_eq!(given.id.map(|id| id.0.to_string()).as_deref(), Some(id));
        assert_eq!(given.version, Some(3));
        for (text, path) in [
            (r#"{"id": null}"#, "/id"),
            (r#"{"version": null}"#, "/version"),
        ] {
            let issues = typed(text).await.expect_err(text);
            assert_eq!(issues.len(), 1, "{text}");
            assert_eq!(issues[0].0, path, "{text}");
            assert!(issues[0].1.starts_with(NULL_MESSAGE), "{text}: {issues:?}");
        }
    }

    #[tokio::test]
    async fn a_body_is_an_object_never_the_array_of_its_fields() {
        for text in ["[]", "[null, 7.0, 24]", "\"x\"", "7"] {
            let issues = typed(text).await.expect_err(text);
            assert_eq!(
                issues,
                vec![(String::new(), OBJECT_MESSAGE.to_owned())],
                "{text}"
            );
        }
        let issues = typed("[1,").await.expect_err("broken");
        assert_ne!(issues[0].1, OBJECT_MESSAGE, "a syntax error says so");
        assert_eq!(typed("  ").await.expect("empty").hours, 1);
        let nested = typed(r#"{"sample": {"limit": 5}}"#)
            .await
            .expect("an object");
        assert_eq!(nested.sample.limit, 5);
        let issues = typed(r#"{"sample": [5]}"#).await.expect_err("an array");
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].0, "/sample");
        assert!(issues[0].1.starts_with(OBJECT_MESSAGE), "{issues:?}");
    }

    #[tokio::test]
    async fn an_id_is_a_hyphenated_uuid() {
        for text in [
            r#"{"id": "0190a4e28c3b7d109a3e2b4c5d6e7f80"}"#,
            r#"{"id": "urn:uuid:0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80"}"#,
            r#"{"id": 7}"#,
        ] {
            let issues = typed(text).await.expect_err(text);
            assert_eq!(issues.len(), 1, "{text}");
            assert_eq!(issues[0].0, "/id", "{text}");
        }
    }

    #[tokio::test]
    async fn an_integer_field_takes_a_number_without_a_fraction() {
        let read = typed(r#"{"version": 7.0, "hours": 24.0}"#)
            .await
            .expect("whole");
        assert_eq!((read.version, read.hours), (Some(7), 24));
        for (text, path) in [
            (r#"{"hours": 24.5}"#, "/hours"),
            (r#"{"hours": -1}"#, "/hours"),
            (r#"{"hours": 1e30}"#, "/hours"),
            (r#"{"hours": "24"}"#, "/hours"),
            (r#"{"version": 2147483648}"#, "/version"),
            (r#"{"version": 0.5}"#, "/version"),
        ] {
            let issues = typed(text).await.expect_err(text);
            assert_eq!(issues.len(), 1, "{text}");
            assert_eq!(issues[0].0, path, "{text}");
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
