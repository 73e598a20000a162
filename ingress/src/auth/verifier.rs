//! Verifies bearer tokens. The accepted algorithm is fixed by configuration and never taken from
//! the token, so `alg: none` and algorithm-confusion tokens (an HS256 token "signed" with the
//! RS256 public key) are refused; `exp` is required, `nbf` checked, `iss`/`aud` checked when
//! configured.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{DecodingKey, Validation};

use super::claims::Claims;
use super::permission::Role;
use super::principal::Principal;
use super::verified_tokens::VerifiedTokens;
use crate::directory::Sightings;
use crate::error::AuthFailure;

/// The algorithm a deployment accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// Shared secret (`JWT_SECRET`): development.
    Hs256,
    /// RSA public key (`JWT_PUBLIC_KEY`): production.
    Rs256,
    /// P-256 public key (`JWT_PUBLIC_KEY`): production.
    Es256,
}

impl Algorithm {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_uppercase().as_str() {
            "HS256" => Some(Algorithm::Hs256),
            "RS256" => Some(Algorithm::Rs256),
            "ES256" => Some(Algorithm::Es256),
            _ => None,
        }
    }

    fn jwt(self) -> jsonwebtoken::Algorithm {
        match self {
            Algorithm::Hs256 => jsonwebtoken::Algorithm::HS256,
            Algorithm::Rs256 => jsonwebtoken::Algorithm::RS256,
            Algorithm::Es256 => jsonwebtoken::Algorithm::ES256,
        }
    }
}

/// Token settings of a deployment.
#[derive(Clone)]
pub(crate) struct AuthConfig {
    pub algorithm: Algorithm,
    /// The HS256 secret, or the PEM public key for RS256/ES256.
    pub key: Vec<u8>,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches a log line.
        f.debug_struct("AuthConfig")
            .field("algorithm", &self.algorithm)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway_seconds", &self.leeway_seconds)
            .finish_non_exhaustive()
    }
}

/// Why a configuration cannot verify tokens.
#[derive(Debug, thiserror::Error)]
#[error("JWT key for {algorithm:?} is unusable: {reason}")]
pub(crate) struct KeyError {
    algorithm: Algorithm,
    reason: String,
}

/// Verifies tokens against one key and one algorithm, remembering those it accepted until they
/// expire.
pub(crate) struct TokenVerifier {
    key: DecodingKey,
    validation: Validation,
    verified: VerifiedTokens,
    /// Where a token verified for the first time is noted (the user directory).
    sightings: Option<Sightings>,
}

impl std::fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenVerifier")
            .field("algorithms", &self.validation.algorithms)
            .finish_non_exhaustive()
    }
}

impl TokenVerifier {
    pub(crate) fn new(config: &AuthConfig) -> Result<Self, KeyError> {
        let key_error = |reason: String| KeyError {
            algorithm: config.algorithm,
            reason,
        };
        let key = match config.algorithm {
            Algorithm::Hs256 => {
                if config.key.is_empty() {
                    return Err(key_error("the secret is empty".into()));
                }
                DecodingKey::from_secret(&config.key)
            }
            Algorithm::Rs256 => {
                DecodingKey::from_rsa_pem(&config.key).map_err(|e| key_error(e.to_string()))?
            }
            Algorithm::Es256 => {
                DecodingKey::from_ec_pem(&config.key).map_err(|e| key_error(e.to_string()))?
            }
        };
        let mut validation = Validation::new(config.algorithm.jwt());
        validation.set_required_spec_claims(&["exp"]);
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = config.leeway_seconds;
        match &config.issuer {
            Some(issuer) => {
                validation.set_issuer(&[issuer]);
                validation.required_spec_claims.insert("iss".into());
            }
            None => validation.iss = None,
        }
        match &config.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                validation.required_spec_claims.insert("aud".into());
            }
            None => validation.validate_aud = false,
        }
        Ok(Self {
            key,
            validation,
            verified: VerifiedTokens::default(),
            sightings: None,
        })
    }

    /// Verifies `token` and returns its principal.
    pub(crate) fn verify(&self, token: &str) -> Result<Principal, AuthFailure> {
        if let Some(principal) = self.verified.get(token) {
            return Ok(principal);
        }
        let (principal, exp, roles) = self.check(token)?;
        self.verified.insert(token, &principal, exp);
        if let Some(sightings) = &self.sightings {
            sightings.saw(&principal, &roles);
        }
        Ok(principal)
    }

    /// Notes each token verified for the first time in `sightings`.
    pub(crate) fn noting(mut self, sightings: Sightings) -> Self {
        self.sightings = Some(sightings);
        self
    }

    /// The signature and claims of `token`: its principal, `exp` and the roles it names.
    fn check(&self, token: &str) -> Result<(Principal, u64, Vec<Role>), AuthFailure> {
        // A header that does not decode (`alg: none`, garbage) is a forged token, not bad claims.
        jsonwebtoken::decode_header(token).map_err(|_| AuthFailure::Invalid)?;
        let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation).map_err(
            |error| match error.kind() {
                ErrorKind::ExpiredSignature => AuthFailure::Expired,
                ErrorKind::ImmatureSignature => AuthFailure::NotYetValid,
                ErrorKind::Json(_)
                | ErrorKind::MissingRequiredClaim(_)
                | ErrorKind::InvalidClaimFormat(_)
                | ErrorKind::InvalidIssuer
                | ErrorKind::InvalidAudience
                | ErrorKind::InvalidSubject => AuthFailure::BadClaims,
                _ => AuthFailure::Invalid,
            },
        )?;
        let exp = data.claims.exp;
        let roles = data.claims.roles.clone();
        Ok((Principal::from_claims(data.claims)?, exp, roles))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::{Value, json};
    use uuid::Uuid;

    use super::*;

    const RSA_PRIVATE: &[u8] = include_bytes!("../../tests/fixtures/rsa_private.pem");
    const RSA_PUBLIC: &[u8] = include_bytes!("../../tests/fixtures/rsa_public.pem");
    const RSA_OTHER_PRIVATE: &[u8] = include_bytes!("../../tests/fixtures/rsa_other_private.pem");
    const EC_PRIVATE: &[u8] = include_bytes!("../../tests/fixtures/ec_private.pem");
    const EC_PUBLIC: &[u8] = include_bytes!("../../tests/fixtures/ec_public.pem");
    const SECRET: &[u8] = b"test-secret-test-secret-test-secret!";

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn claims() -> Value {
        json!({
            "sub": "user-1", "tenant": Uuid::new_v4(), "name": "Ada", "kind": "human",
            "roles": ["admin"], "exp": now() + 600, "iat": now(),
        })
    }

    fn config(algorithm: Algorithm, key: &[u8]) -> AuthConfig {
        AuthConfig {
            algorithm,
            key: key.to_vec(),
            issuer: None,
            audience: None,
            leeway_seconds: 5,
        }
    }

    fn hs256(claims: &Value, secret: &[u8]) -> String {
        jsonwebtoken::encode(
            &Header::default(),
            claims,
            &EncodingKey::from_secret(secret),
        )
        .expect("sign")
    }

    fn signed(alg: jsonwebtoken::Algorithm, claims: &Value, key: &EncodingKey) -> String {
        jsonwebtoken::encode(&Header::new(alg), claims, key).expect("sign")
    }

    fn rs256(claims: &Value, private: &[u8]) -> String {
        signed(
            jsonwebtoken::Algorithm::RS256,
            claims,
            &EncodingKey::from_rsa_pem(private).expect("rsa key"),
        )
    }

    fn unsigned(claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        format!("{header}.{payload}.")
    }

    fn tampered(token: &str) -> String {
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut payload: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).expect("b64")).expect("json");
        payload["tenant"] = json!(Uuid::new_v4());
        parts[1] = URL_SAFE_NO_PAD.encode(payload.to_string());
        parts.join(".")
    }

    fn without(mut claims: Value, key: &str) -> Value {
        claims.as_object_mut().expect("object").remove(key);
        claims
    }

    fn with(mut claims: Value, key: &str, value: Value) -> Value {
        claims[key] = value;
        claims
    }

    #[test]
    fn valid_tokens_of_each_algorithm_verify() {
        let hs = TokenVerifier::new(&config(Algorithm::Hs256, SECRET)).expect("hs");
        let p = hs.verify(&hs256(&claims(), SECRET)).expect("hs256 valid");
        assert_eq!(&*p.sub, "user-1");
        let rs = TokenVerifier::new(&config(Algorithm::Rs256, RSA_PUBLIC)).expect("rs");
        rs.verify(&rs256(&claims(), RSA_PRIVATE))
            .expect("rs256 valid");
        let es = TokenVerifier::new(&config(Algorithm::Es256, EC_PUBLIC)).expect("es");
        let token = signed(
            jsonwebtoken::Algorithm::ES256,
            &claims(),
            &EncodingKey::from_ec_pem(EC_PRIVATE).expect("ec key"),
        );
        es.verify(&token).expect("es256 valid");
    }

    #[test]
    fn forged_tokens_are_refused_by_an_hs256_deployment() {
        let hs = TokenVerifier::new(&config(Algorithm::Hs256, SECRET)).expect("hs");
        let valid = hs256(&claims(), SECRET);
        let cases: Vec<(&str, String, AuthFailure)> = vec![
            ("alg none", unsigned(&claims()), AuthFailure::Invalid),
            (
                "wrong secret",
                hs256(&claims(), b"another-secret-another-secret!!!"),
                AuthFailure::Invalid,
            ),
            (
                "rs256 token",
                rs256(&claims(), RSA_PRIVATE),
                AuthFailure::Invalid,
            ),
            (
                "expired",
                hs256(&with(claims(), "exp", json!(now() - 3600)), SECRET),
                AuthFailure::Expired,
            ),
            (
                "nbf in the future",
                hs256(&with(claims(), "nbf", json!(now() + 3600)), SECRET),
                AuthFailure::NotYetValid,
            ),
            (
                "no exp",
                hs256(&without(claims(), "exp"), SECRET),
                AuthFailure::BadClaims,
            ),
            ("tampered payload", tampered(&valid), AuthFailure::Invalid),
            (
                "no tenant",
                hs256(&without(claims(), "tenant"), SECRET),
                AuthFailure::BadClaims,
            ),
            (
                "tenant not a uuid",
                hs256(&with(claims(), "tenant", json!("acme")), SECRET),
                AuthFailure::BadClaims,
            ),
            (
                "unknown kind",
                hs256(&with(claims(), "kind", json!("robot")), SECRET),
                AuthFailure::BadClaims,
            ),
            (
                "roles not a list",
                hs256(&with(claims(), "roles", json!("admin")), SECRET),
                AuthFailure::BadClaims,
            ),
            ("garbage", "not-a-token".into(), AuthFailure::Invalid),
            ("three garbage parts", "a.b.c".into(), AuthFailure::Invalid),
            (
                "truncated",
                valid[..valid.len() - 5].to_owned(),
                AuthFailure::Invalid,
            ),
        ];
        // The valid token is remembered first: nothing derived from it may ride on that.
        hs.verify(&valid).expect("valid");
        hs.verify(&valid).expect("valid again, remembered");
        for (name, token, expected) in cases {
            assert_eq!(hs.verify(&token).err(), Some(expected), "{name}");
        }
    }

    #[test]
    fn roles_this_service_does_not_know_are_ignored() {
        let hs = TokenVerifier::new(&config(Algorithm::Hs256, SECRET)).expect("hs");
        let token = hs256(
            &with(claims(), "roles", json!(["case-manager", "analyst", 7])),
            SECRET,
        );
        let refused = hs.verify(&token);
        assert_eq!(
            refused.err(),
            Some(AuthFailure::BadClaims),
            "a role that is not a string is a broken claim"
        );
        let token = hs256(
            &with(claims(), "roles", json!(["case-manager", "analyst"])),
            SECRET,
        );
        let principal = hs.verify(&token).expect("an unknown role is ignored");
        assert!(principal.has(crate::auth::Permission::AppsRead));
        assert!(!principal.has(crate::auth::Permission::AppsWrite));
        let only_unknown = hs256(&with(claims(), "roles", json!(["root"])), SECRET);
        let principal = hs
            .verify(&only_unknown)
            .expect("accepted, granting nothing");
        assert!(!principal.has(crate::auth::Permission::AppsRead));
    }

    #[test]
    fn algorithm_confusion_is_refused_by_an_rs256_deployment() {
        let rs = TokenVerifier::new(&config(Algorithm::Rs256, RSA_PUBLIC)).expect("rs");
        // The classic attack: HMAC with the public key as secret, header says HS256.
        let confused = hs256(&claims(), RSA_PUBLIC);
        assert_eq!(rs.verify(&confused).err(), Some(AuthFailure::Invalid));
        assert_eq!(
            rs.verify(&unsigned(&claims())).err(),
            Some(AuthFailure::Invalid)
        );
        assert_eq!(
            rs.verify(&rs256(&claims(), RSA_OTHER_PRIVATE)).err(),
            Some(AuthFailure::Invalid)
        );
        let es = signed(
            jsonwebtoken::Algorithm::ES256,
            &claims(),
            &EncodingKey::from_ec_pem(EC_PRIVATE).expect("ec key"),
        );
        assert_eq!(rs.verify(&es).err(), Some(AuthFailure::Invalid));
    }

    #[test]
    fn issuer_and_audience_are_checked_when_configured() {
        let mut cfg = config(Algorithm::Hs256, SECRET);
        cfg.issuer = Some("https://id.example".into());
        cfg.audience = Some("risk-api".into());
        let v = TokenVerifier::new(&cfg).expect("hs");
        let good = with(
            with(claims(), "iss", json!("https://id.example")),
            "aud",
            json!("risk-api"),
        );
        v.verify(&hs256(&good, SECRET)).expect("valid");
        for bad in [
            claims(),
            with(good.clone(), "iss", json!("https://evil.example")),
            with(good.clone(), "aud", json!("other")),
            without(good.clone(), "aud"),
        ] {
            assert_eq!(
                v.verify(&hs256(&bad, SECRET)).err(),
                Some(AuthFailure::BadClaims),
                "{bad}"
            );
        }
    }

    #[test]
    fn unusable_keys_are_refused_at_start_up() {
        assert!(TokenVerifier::new(&config(Algorithm::Hs256, b"")).is_err());
        assert!(TokenVerifier::new(&config(Algorithm::Rs256, b"not a pem")).is_err());
        assert!(TokenVerifier::new(&config(Algorithm::Es256, RSA_PUBLIC)).is_err());
    }
}
