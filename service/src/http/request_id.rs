//! `x-request-id`: the caller's value is kept when it is 1 to 128 characters of letters, digits,
//! `.`, `_`, `-` (SPEC §7); otherwise a fresh UUID stands in.

use http::{HeaderName, HeaderValue};

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The request id of a request: the caller's when acceptable, else a new UUID.
pub fn from_header(value: Option<&HeaderValue>) -> String {
    match value.map(HeaderValue::as_bytes) {
        Some(bytes) if is_acceptable(bytes) => {
            // Acceptable bytes are ASCII, so this conversion cannot fail.
            String::from_utf8_lossy(bytes).into_owned()
        }
        _ => uuid::Uuid::new_v4().to_string(),
    }
}

fn is_acceptable(bytes: &[u8]) -> bool {
    (1..=128).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(raw: &[u8]) -> String {
        from_header(Some(&HeaderValue::from_bytes(raw).expect("header")))
    }

    fn is_uuid(s: &str) -> bool {
        uuid::Uuid::parse_str(s).is_ok()
    }

    #[test]
    fn keeps_acceptable_ids() {
        assert_eq!(id(b"abc-123_X.y"), "abc-123_X.y");
        let longest = "a".repeat(128);
        assert_eq!(id(longest.as_bytes()), longest);
    }

    #[test]
    fn replaces_unacceptable_ids_with_a_uuid() {
        for raw in [
            &b"has space"[..],
            b"semi;colon",
            b"slash/",
            "é".as_bytes(),
            b"a\tb",
        ] {
            assert!(is_uuid(&id(raw)), "{raw:?}");
        }
        assert!(is_uuid(&id("a".repeat(129).as_bytes())));
        assert!(is_uuid(&id(b"")));
        assert!(is_uuid(&from_header(None)));
    }
}
