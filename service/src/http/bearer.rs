//! `Authorization: Bearer <token>` (RFC 6750), read the same way by every listener: the scheme
//! is case-insensitive (RFC 9110 §11.1), separated from the token by spaces; the token itself is
//! what follows, trimmed.

use http::HeaderMap;
use http::header::AUTHORIZATION;
use subtle::ConstantTimeEq;

/// Why a request carries no usable bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoBearer {
    /// No `Authorization` header, or `Bearer` with nothing after it.
    Missing,
    /// Another scheme, or a header that is not text.
    NotBearer,
}

/// The token of the request's `Authorization: Bearer` header.
pub fn token(headers: &HeaderMap) -> Result<&str, NoBearer> {
    let value = headers.get(AUTHORIZATION).ok_or(NoBearer::Missing)?;
    let text = value.to_str().map_err(|_| NoBearer::NotBearer)?;
    let (scheme, rest) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(NoBearer::NotBearer);
    }
    match rest.trim() {
        "" => Err(NoBearer::Missing),
        token => Ok(token),
    }
}

/// Whether the request's bearer is `expected` (a shared service token such as
/// `APP_RUNNER_TOKEN`), compared in constant time. Without an expected token nobody passes.
pub fn is_shared_token(headers: &HeaderMap, expected: Option<&str>) -> bool {
    match (token(headers), expected) {
        (Ok(presented), Some(expected)) => presented.as_bytes().ct_eq(expected.as_bytes()).into(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn with(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn header_forms() {
        assert_eq!(token(&with("Bearer abc")), Ok("abc"));
        assert_eq!(token(&with("bearer abc")), Ok("abc"));
        assert_eq!(token(&with("BEARER  abc ")), Ok("abc"));
        assert_eq!(token(&HeaderMap::new()), Err(NoBearer::Missing));
        assert_eq!(token(&with("Basic abc")), Err(NoBearer::NotBearer));
        assert_eq!(token(&with("Bearerabc")), Err(NoBearer::NotBearer));
        assert_eq!(token(&with("Bearer")), Err(NoBearer::Missing));
        assert_eq!(token(&with("Bearer   ")), Err(NoBearer::Missing));
    }

    #[test]
    fn a_shared_token_must_match_exactly_and_be_configured() {
        assert!(is_shared_token(&with("Bearer s3cret"), Some("s3cret")));
        assert!(is_shared_token(&with("bearer s3cret"), Some("s3cret")));
        assert!(!is_shared_token(&with("Bearer s3cre"), Some("s3cret")));
        assert!(!is_shared_token(&with("Bearer s3cret"), None));
        assert!(!is_shared_token(&HeaderMap::new(), Some("s3cret")));
    }
}
