//! Sealed secret values: how an install's secret travels on a topic and rests in its row
//! (SPEC §2.10). The API seals the value as it arrives, so the plaintext is never on the log,
//! in a table or in a reply; whoever calls the runner opens it just before the call.
//!
//! AES-256-GCM (`aes-gcm`), a random 96-bit nonce per seal, and associated data binding the
//! tenant, the app and the secret's name: a ciphertext copied onto another row (another
//! tenant, app or name) fails to open. Each sealed value names the key that sealed it
//! (`key_id`), so `SECRET_STORE_KEY` can rotate while values sealed under the previous key
//! (`SECRET_STORE_PREVIOUS_KEYS`) still open.

use std::collections::BTreeMap;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// A secret value as it travels and rests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sealed {
    /// Names the key that sealed it ([`SecretKeys`]).
    pub key_id: String,
    #[serde(with = "base64_bytes")]
    pub nonce: Vec<u8>,
    /// The ciphertext with its 16-byte tag.
    #[serde(with = "base64_bytes")]
    pub ciphertext: Vec<u8>,
}

/// What a sealed value belongs to; part of the associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    pub tenant: Uuid,
    pub app: &'a str,
    pub name: &'a str,
}

impl Binding<'_> {
    fn associated_data(&self) -> Vec<u8> {
        // Names hold no NUL (SPEC patterns), so the parts cannot be shifted into each other.
        format!("apps-secret\0{}\0{}\0{}", self.tenant, self.app, self.name).into_bytes()
    }
}

/// A key that is not 32 bytes of base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a secret store key is 32 random bytes in base64")]
pub struct BadKey;

/// A sealed value that does not open: another row's, tampered with, or sealed by a key this
/// process does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("sealed by key {0}, which this process does not hold")]
    UnknownKey(String),
    #[error("the sealed value does not open under its binding")]
    Corrupt,
}

struct Key {
    id: String,
    cipher: Aes256Gcm,
}

impl Key {
    fn parse(base64: &str) -> Result<Self, BadKey> {
        let bytes = BASE64.decode(base64.trim()).map_err(|_| BadKey)?;
        if bytes.len() != 32 {
            return Err(BadKey);
        }
        // The id names the key without revealing it: a prefix of a domain-separated digest.
        let digest = Sha256::new()
            .chain_update(b"apps-secret-store-key-id\0")
            .chain_update(&bytes)
            .finalize();
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| BadKey)?;
        Ok(Self {
            id: hex::encode(&digest[..8]),
            cipher,
        })
    }
}

/// The keys of the secret store: the one that seals, and older ones that still open.
pub struct SecretKeys {
    current: Key,
    previous: Vec<Key>,
}

impl std::fmt::Debug for SecretKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretKeys")
            .field("current", &self.current.id)
            .field("previous", &self.previous.len())
            .finish()
    }
}

impl SecretKeys {
    /// `current` seals and opens; each of `previous` only opens.
    pub fn parse(current: &str, previous: &[&str]) -> Result<Self, BadKey> {
        Ok(Self {
            current: Key::parse(current)?,
            previous: previous
                .iter()
                .map(|k| Key::parse(k))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The keys a service is configured with: `current` (`SECRET_STORE_KEY`) and `previous`
    /// (`SECRET_STORE_PREVIOUS_KEYS`, comma-separated); `None` without a current key. The error
    /// is the configuration problem to report.
    pub fn configured(
        current: Option<&str>,
        previous: Option<&str>,
    ) -> Result<Option<Self>, String> {
        let Some(current) = current else {
            return Ok(None);
        };
        let previous: Vec<&str> = previous
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect();
        Self::parse(current, &previous)
            .map(Some)
            .map_err(|e| format!("SECRET_STORE_KEY or SECRET_STORE_PREVIOUS_KEYS: {e}"))
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    pub fn seal(&self, binding: Binding<'_>, value: &str) -> Sealed {
        let nonce_bytes: [u8; 12] = rand::random();
        let aad = binding.associated_data();
        let ciphertext = self
            .current
            .cipher
            .encrypt(
                &Nonce::from(nonce_bytes),
                Payload {
                    msg: value.as_bytes(),
                    aad: &aad,
                },
            )
            // Encryption fails only for inputs over GCM's 64 GiB bound; values are far smaller.
            .unwrap_or_default();
        Sealed {
            key_id: self.current.id.clone(),
            nonce: nonce_bytes.to_vec(),
            ciphertext,
        }
    }

    pub fn open(&self, binding: Binding<'_>, sealed: &Sealed) -> Result<String, OpenError> {
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == sealed.key_id)
            .ok_or_else(|| OpenError::UnknownKey(sealed.key_id.clone()))?;
        let nonce: [u8; 12] = sealed
            .nonce
            .as_slice()
            .try_into()
            .map_err(|_| OpenError::Corrupt)?;
        let aad = binding.associated_data();
        let plain = key
            .cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: &sealed.ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| OpenError::Corrupt)?;
        String::from_utf8(plain).map_err(|_| OpenError::Corrupt)
    }

    /// Opens every sealed value of `app`'s install for one call: name → value. The error names
    /// the secret that did not open.
    pub fn open_each(
        &self,
        tenant: Uuid,
        app: &str,
        sealed: impl IntoIterator<Item = (String, Sealed)>,
    ) -> Result<BTreeMap<String, String>, (String, OpenError)> {
        sealed
            .into_iter()
            .map(|(name, sealed)| {
                let binding = Binding {
                    tenant,
                    app,
                    name: &name,
                };
                match self.open(binding, &sealed) {
                    Ok(value) => Ok((name, value)),
                    Err(error) => Err((name, error)),
                }
            })
            .collect()
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        BASE64.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> String {
        BASE64.encode([byte; 32])
    }

    fn binding(tenant: Uuid) -> Binding<'static> {
        Binding {
            tenant,
            app: "kyc",
            name: "API_KEY",
        }
    }

    #[test]
    fn a_sealed_value_opens_under_its_binding_only() {
        let keys = SecretKeys::parse(&key(1), &[]).expect("key");
        let tenant = Uuid::new_v4();
        let sealed = keys.seal(binding(tenant), "sk-canary");
        assert_eq!(sealed.nonce.len(), 12);
        assert!(!String::from_utf8_lossy(&sealed.ciphertext).contains("sk-canary"));
        assert_eq!(
            keys.open(binding(tenant), &sealed).as_deref(),
            Ok("sk-canary")
        );
        let elsewhere = [
            binding(Uuid::new_v4()),
            Binding {
                app: "aml",
                ..binding(tenant)
            },
            Binding {
                name: "OTHER",
                ..binding(tenant)
            },
        ];
        for other in elsewhere {
            assert_eq!(keys.open(other, &sealed), Err(OpenError::Corrupt));
        }
        let mut tampered = sealed.clone();
        tampered.ciphertext[0] ^= 1;
        assert_eq!(
            keys.open(binding(tenant), &tampered),
            Err(OpenError::Corrupt)
        );
    }

    #[test]
    fn each_seal_takes_a_fresh_nonce() {
        let keys = SecretKeys::parse(&key(1), &[]).expect("key");
        let tenant = Uuid::new_v4();
        let a = keys.seal(binding(tenant), "same");
        let b = keys.seal(binding(tenant), "same");
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    #[test]
    fn a_rotated_key_still_opens_what_it_sealed() {
        let old = SecretKeys::parse(&key(1), &[]).expect("key");
        let tenant = Uuid::new_v4();
        let sealed = old.seal(binding(tenant), "v1");
        let rotated = SecretKeys::parse(&key(2), &[&key(1)]).expect("keys");
        assert_ne!(rotated.current_id(), old.current_id());
        assert_eq!(rotated.open(binding(tenant), &sealed).as_deref(), Ok("v1"));
        assert_eq!(
            rotated.seal(binding(tenant), "v2").key_id,
            rotated.current_id()
        );
        let forgotten = SecretKeys::parse(&key(2), &[]).expect("key");
        assert!(matches!(
            forgotten.open(binding(tenant), &sealed),
            Err(OpenError::UnknownKey(_))
        ));
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_never_shown() {
        assert!(SecretKeys::parse("short", &[]).is_err());
        assert!(SecretKeys::parse(&BASE64.encode([0u8; 31]), &[]).is_err());
        let keys = SecretKeys::parse(&key(7), &[]).expect("key");
        assert!(!format!("{keys:?}").contains(&key(7)));
        let sealed = keys.seal(binding(Uuid::nil()), "x");
        let json = serde_json::to_string(&sealed).expect("json");
        let back: Sealed = serde_json::from_str(&json).expect("back");
        assert_eq!(back, sealed);
    }
}
