//! Path parameters of the public routes, checked before any lookup: an app name (SPEC §1), a
//! record id, a secret name (SPEC §2.8). A malformed one is a `validation_error` naming it.

use uuid::Uuid;

use crate::error::{Error, Location};

/// SPEC §1: 1 to 100 characters of lowercase letters, digits and `-`, starting with a letter
/// or digit.
pub(crate) fn is_app_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=100).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// The `:name` of an apps route.
pub(crate) fn app_name(name: &str) -> Result<&str, Error> {
    if is_app_name(name) {
        Ok(name)
    } else {
        Err(Error::validation(
            Location::Path,
            "name",
            "must be 1 to 100 lowercase letters, digits or '-', starting with a letter or digit",
        ))
    }
}

/// A record id: a UUID.
pub(crate) fn id(name: &str, value: &str) -> Result<Uuid, Error> {
    uuid(value).ok_or_else(|| Error::validation(Location::Path, name, "must be a UUID"))
}

/// A UUID in the hyphenated form of RFC 9562 (`format: uuid`), in either case; not the simple,
/// braced or URN forms `Uuid::try_parse` also takes.
pub(crate) fn uuid(text: &str) -> Option<Uuid> {
    if text.len() != 36 {
        return None;
    }
    Uuid::try_parse(text).ok()
}

/// SPEC §2.8: a letter followed by up to 63 letters, digits or `_`.
pub(crate) fn secret_name(name: &str) -> Result<&str, Error> {
    let bytes = name.as_bytes();
    let valid = (1..=64).contains(&bytes.len())
        && bytes[0].is_ascii_alphabetic()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    if valid {
        Ok(name)
    } else {
        Err(Error::validation(
            Location::Path,
            "secret",
            "must be a letter followed by up to 63 letters, digits or '_'",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_names_follow_the_spec_pattern() {
        assert!(is_app_name("kyc"));
        assert!(is_app_name("0-x"));
        assert!(is_app_name(&"a".repeat(100)));
        assert!(!is_app_name(""));
        assert!(!is_app_name("-kyc"));
        assert!(!is_app_name("Kyc"));
        assert!(!is_app_name("kyc_check"));
        assert!(!is_app_name(&"a".repeat(101)));
    }

    #[test]
    fn ids_are_hyphenated_uuids() {
        let hyphenated = "0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80";
        assert!(uuid(hyphenated).is_some());
        assert!(uuid(&hyphenated.to_uppercase()).is_some());
        for other in [
            "0190a4e28c3b7d109a3e2b4c5d6e7f80",
            "{0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80}",
            "urn:uuid:0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f80",
            "0190a4e2-8c3b-7d10-9a3e-2b4c5d6e7f8",
            "",
        ] {
            assert!(uuid(other).is_none(), "{other}");
            assert!(id("id", other).is_err(), "{other}");
        }
    }

    #[test]
    fn secret_names_follow_the_spec_pattern() {
        assert!(secret_name("API_KEY").is_ok());
        assert!(secret_name(&format!("a{}", "b".repeat(63))).is_ok());
        assert!(secret_name(&format!("a{}", "b".repeat(64))).is_err());
        assert!(secret_name("1KEY").is_err());
        assert!(secret_name("API-KEY").is_err());
    }
}
