//! Signing what the platform sends to tenants' webhook endpoints, per Standard Webhooks (the
//! scheme Svix and others publish): the secret is `whsec_` and the base64 of 32 random bytes;
//! each request carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>` over
//! `<id>.<timestamp>.<body>` with the secret's bytes as the key, one per secret that signs
//! (two while a rotation overlaps).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

const PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;

/// An endpoint's signing secret. Its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret {
    key: Vec<u8>,
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret([redacted])")
    }
}

/// A stored secret that is not `whsec_` and base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a signing secret is whsec_ followed by base64")]
pub struct BadSecret;

impl SigningSecret {
    /// A new secret of 32 random bytes.
    pub fn generate() -> Self {
        let mut key = vec![0u8; SECRET_BYTES];
        rand::rng().fill_bytes(&mut key);
        Self { key }
    }

    /// The secret as it is shown once to the tenant and stored (sealed).
    pub fn reveal(&self) -> String {
        format!("{PREFIX}{}", BASE64.encode(&self.key))
    }

    pub fn parse(text: &str) -> Result<Self, BadSecret> {
        let encoded = text.strip_prefix(PREFIX).ok_or(BadSecret)?;
        let key = BASE64.decode(encoded).map_err(|_| BadSecret)?;
        if key.is_empty() {
            return Err(BadSecret);
        }
        Ok(Self { key })
    }

    /// `v1,<base64 signature>` of one message.
    fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.key) else {
            unreachable!("HMAC accepts keys of any length")
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` header value: one signature per secret, current first.
pub fn signature_header(
    secrets: &[SigningSecret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|secret| secret.sign(id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (and of its reference libraries).
    #[test]
    fn signs_the_specifications_example() {
        let secret =
            SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_generated_secret_reads_back_and_hides_in_debug() {
        let secret = SigningSecret::generate();
        let shown = secret.reveal();
        assert!(shown.starts_with("whsec_"));
        assert_eq!(SigningSecret::parse(&shown), Ok(secret.clone()));
        assert!(!format!("{secret:?}").contains(&shown[6..]));
        assert_ne!(SigningSecret::generate(), secret);
    }

    #[test]
    fn two_secrets_sign_side_by_side() {
        let (a, b) = (SigningSecret::generate(), SigningSecret::generate());
        let header = signature_header(&[a.clone(), b.clone()], "msg_1", 1, b"{}");
        assert_eq!(
            header,
            format!(
                "{} {}",
                a.sign("msg_1", 1, b"{}"),
                b.sign("msg_1", 1, b"{}")
            )
        );
        assert_eq!(
            SigningSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(BadSecret)
        );
        assert_eq!(SigningSecret::parse("whsec_!!"), Err(BadSecret));
    }
}
