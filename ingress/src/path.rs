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
    Uuid::try_parse(value).map_err(|_| Error::validation(Location::Path, name, "must be a UUID"))
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
    fn secret_names_follow_the_spec_pattern() {
        assert!(secret_name("API_KEY").is_ok());
        assert!(secret_name(&format!("a{}", "b".repeat(63))).is_ok());
        assert!(secret_name(&format!("a{}", "b".repeat(64))).is_err());
        assert!(secret_name("1KEY").is_err());
        assert!(secret_name("API-KEY").is_err());
    }
}
