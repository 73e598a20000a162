//! The call token (SPEC §4.13, §5, §8): what lets one app call read its documents. The pipeline
//! (and the API's test route) mints one for each call of an app whose manifest declares
//! `needs: ['documents']` and passes it to the runner with the call; the runner presents it to
//! the API's internal document routes, which verify it. It binds the tenant, the call and the
//! run's subject, expires five minutes after it was minted, and is signed HS256 with
//! `APP_CALL_TOKEN_SECRET`, which the runner never holds: a module (or a runner it took over)
//! can neither widen nor extend what its token grants.
//!
//! The token is never logged, stored or recorded: it lives in the runner request only.

use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How long a token is valid after it was minted (SPEC §8).
pub const LIFETIME: Duration = Duration::from_secs(5 * 60);

/// Shortest secret accepted: HS256 with fewer bytes than its hash is guessable offline.
pub const MIN_SECRET_BYTES: usize = 32;

/// The `aud` of every call token, so that no other token signed with the same secret (an API
/// token of a deployment that reused it) passes for one.
const AUDIENCE: &str = "app-call";

/// What a call token grants: the documents of `tenant`'s `subject`, to the call `call`. A call
/// without a subject (a test call) is granted no documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallGrant {
    pub tenant: Uuid,
    pub call: Uuid,
    pub subject: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    tenant: Uuid,
    call: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subject: Option<Uuid>,
    aud: String,
    iat: u64,
    exp: u64,
}

/// Why a token was not minted, or not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallTokenError {
    #[error("APP_CALL_TOKEN_SECRET must be at least {MIN_SECRET_BYTES} bytes")]
    WeakSecret,
    #[error("the call token could not be signed: {0}")]
    Unsigned(String),
    /// Not a token this deployment signed (malformed, forged, another secret or audience).
    #[error("the call token is invalid")]
    Invalid,
    #[error("the call token has expired")]
    Expired,
    /// A valid token presented for another call.
    #[error("the call token is another call's")]
    OtherCall,
}

impl CallTokenError {
    /// A short name for log lines.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallTokenError::WeakSecret => "weak_secret",
            CallTokenError::Unsigned(_) => "unsigned",
            CallTokenError::Invalid => "invalid",
            CallTokenError::Expired => "expired",
            CallTokenError::OtherCall => "other_call",
        }
    }
}

/// Signs and verifies call tokens with `APP_CALL_TOKEN_SECRET`.
pub struct CallTokenKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for CallTokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret never reaches a log line.
        f.debug_struct("CallTokenKey").finish_non_exhaustive()
    }
}

impl CallTokenKey {
    pub fn new(secret: &[u8]) -> Result<Self, CallTokenError> {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(CallTokenError::WeakSecret);
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "aud"]);
        validation.set_audience(&[AUDIENCE]);
        // Five minutes are five minutes: the pipeline and the API share a clock source.
        validation.leeway = 0;
        Ok(Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
        })
    }

    /// The key a service is configured with (`APP_CALL_TOKEN_SECRET`), `None` without one;
    /// the error is the configuration problem to report.
    pub fn configured(secret: Option<&str>) -> Result<Option<Self>, CallTokenError> {
        secret.map(|s| Self::new(s.as_bytes())).transpose()
    }

    /// A token for `grant`, valid for [`LIFETIME`] from now.
    pub fn mint(&self, grant: &CallGrant) -> Result<String, CallTokenError> {
        self.mint_at(grant, jsonwebtoken::get_current_timestamp())
    }

    /// A token for `grant` as if minted at `issued_at` (Unix seconds): tests mint expired ones.
    pub fn mint_at(&self, grant: &CallGrant, issued_at: u64) -> Result<String, CallTokenError> {
        let claims = Claims {
            tenant: grant.tenant,
            call: grant.call,
            subject: grant.subject,
            aud: AUDIENCE.to_owned(),
            iat: issued_at,
            exp: issued_at + LIFETIME.as_secs(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|e| CallTokenError::Unsigned(e.to_string()))
    }

    /// What `token` grants, if this deployment signed it, it has not expired and it is the
    /// token of `call` (the call id of the route it was presented on).
    pub fn verify(&self, token: &str, call: &str) -> Result<CallGrant, CallTokenError> {
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => CallTokenError::Expired,
                _ => CallTokenError::Invalid,
            })?
            .claims;
        if Uuid::try_parse(call).ok() != Some(claims.call) {
            return Err(CallTokenError::OtherCall);
        }
        Ok(CallGrant {
            tenant: claims.tenant,
            call: claims.call,
            subject: claims.subject,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"a-call-token-secret-of-at-least-32-bytes";

    fn grant() -> CallGrant {
        CallGrant {
            tenant: Uuid::now_v7(),
            call: Uuid::now_v7(),
            subject: Some(Uuid::now_v7()),
        }
    }

    fn key(secret: &[u8]) -> CallTokenKey {
        CallTokenKey::new(secret).expect("key")
    }

    #[test]
    fn a_token_grants_what_it_was_minted_for_to_its_call_only() {
        let key = key(SECRET);
        let grant = grant();
        let token = key.mint(&grant).expect("signs");
        assert_eq!(key.verify(&token, &grant.call.to_string()), Ok(grant));
        let other = Uuid::now_v7().to_string();
        assert_eq!(key.verify(&token, &other), Err(CallTokenError::OtherCall));
        assert_eq!(
            key.verify(&token, "not-a-call"),
            Err(CallTokenError::OtherCall)
        );
        let no_subject = CallGrant {
            subject: None,
            ..grant
        };
        let token = key.mint(&no_subject).expect("signs");
        assert_eq!(key.verify(&token, &grant.call.to_string()), Ok(no_subject));
    }

    #[test]
    fn expired_forged_and_foreign_tokens_are_refused() {
        let key = key(SECRET);
        let grant = grant();
        let call = grant.call.to_string();
        let now = jsonwebtoken::get_current_timestamp();
        let stale = key
            .mint_at(&grant, now - LIFETIME.as_secs() - 1)
            .expect("signs");
        assert_eq!(key.verify(&stale, &call), Err(CallTokenError::Expired));
        let fresh_enough = key
            .mint_at(&grant, now - LIFETIME.as_secs() + 5)
            .expect("signs");
        assert!(key.verify(&fresh_enough, &call).is_ok());

        let forged = self::key(b"another-secret-that-is-32-bytes-long!!")
            .mint(&grant)
            .expect("signs");
        assert_eq!(key.verify(&forged, &call), Err(CallTokenError::Invalid));
        assert_eq!(
            key.verify("not.a.token", &call),
            Err(CallTokenError::Invalid)
        );

        // Signed with the same secret but not a call token (no `aud: app-call`).
        #[derive(Serialize)]
        struct ApiClaims {
            tenant: Uuid,
            call: Uuid,
            exp: u64,
        }
        let api = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &ApiClaims {
                tenant: grant.tenant,
                call: grant.call,
                exp: now + 60,
            },
            &EncodingKey::from_secret(SECRET),
        )
        .expect("signs");
        assert_eq!(key.verify(&api, &call), Err(CallTokenError::Invalid));
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(matches!(
            CallTokenKey::new(b"short"),
            Err(CallTokenError::WeakSecret)
        ));
        assert!(matches!(CallTokenKey::configured(None), Ok(None)));
        assert!(matches!(
            CallTokenKey::configured(Some("x")),
            Err(CallTokenError::WeakSecret)
        ));
    }
}
