//! Development tokens (`ingress mint-token`), signed HS256 with `JWT_SECRET`.

use jsonwebtoken::{EncodingKey, Header};
use uuid::Uuid;

use super::claims::{Claims, Kind};
use super::permission::Role;

/// What to put in a development token.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub tenant: Uuid,
    pub sub: String,
    pub name: String,
    pub kind: Kind,
    pub roles: Vec<Role>,
    pub perms: Vec<String>,
    pub submission: Option<Uuid>,
    pub ttl_seconds: u64,
    pub issuer: Option<String>,
    pub audience: Option<String>,
}

/// Signs the token with the shared secret.
pub fn mint(request: TokenRequest, secret: &[u8]) -> Result<String, jsonwebtoken::errors::Error> {
    let now = jsonwebtoken::get_current_timestamp();
    let claims = Claims {
        sub: request.sub,
        tenant: request.tenant,
        name: request.name,
        kind: request.kind,
        roles: request.roles,
        perms: request.perms,
        submission: request.submission,
        exp: now + request.ttl_seconds,
        iat: Some(now),
        nbf: None,
        iss: request.issuer,
        aud: request.audience,
    };
    jsonwebtoken::encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret),
    )
}
