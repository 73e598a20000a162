//! App modules (SPEC §2.10, §8): at most [`MAX_MODULE_BYTES`], each named by the hex SHA-256 of
//! its bytes ([`Sha256`]) in storage, on the wire and in the runner's caches.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The largest module the platform runs (SPEC §8 "Module size").
pub const MAX_MODULE_BYTES: usize = 32 * 1024 * 1024;

/// The name of a module: the SHA-256 of its bytes as 64 lower-case hex characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256(String);

/// Text that is not 64 lower-case hex characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a sha256: 64 lower-case hex characters")]
pub struct NotSha256;

impl Sha256 {
    /// The name of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(sha2::Sha256::digest(bytes)))
    }

    /// A comma-separated list of hashes (`APP_BLOCKED_SHA256`), any case; the error names the
    /// first item that is not a hash.
    pub fn parse_list(list: &str) -> Result<Vec<Self>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                item.to_ascii_lowercase()
                    .parse()
                    .map_err(|_| format!("{item:?} is not a sha256"))
            })
            .collect()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Sha256 {
    type Err = NotSha256;

    fn from_str(text: &str) -> Result<Self, NotSha256> {
        let hex = text.len() == 64
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if hex {
            Ok(Self(text.to_owned()))
        } else {
            Err(NotSha256)
        }
    }
}

impl TryFrom<String> for Sha256 {
    type Error = NotSha256;

    fn try_from(text: String) -> Result<Self, NotSha256> {
        text.parse()
    }
}

impl From<Sha256> for String {
    fn from(sha256: Sha256) -> Self {
        sha256.0
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Sha256 {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lowercase_hex_of_the_right_length_names_a_module() {
        assert!("a".repeat(64).parse::<Sha256>().is_ok());
        assert!("A".repeat(64).parse::<Sha256>().is_err());
        assert!("a".repeat(63).parse::<Sha256>().is_err());
        assert!(format!("{}g", "a".repeat(63)).parse::<Sha256>().is_err());
        assert!("../../etc/passwd".parse::<Sha256>().is_err());
    }

    #[test]
    fn a_module_is_named_by_the_digest_of_its_bytes() {
        assert_eq!(
            Sha256::of(b"").as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let json = serde_json::to_string(&Sha256::of(b"x")).expect("serialises");
        let back: Sha256 = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, Sha256::of(b"x"));
        assert!(serde_json::from_str::<Sha256>("\"nope\"").is_err());
    }
}
