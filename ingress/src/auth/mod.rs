//! Bearer JWT authentication and the permissions a principal holds (SPEC §5, DEVELOPERS.md
//! "Conventions").

pub(crate) mod claims;
pub(crate) mod mint;
pub(crate) mod permission;
pub(crate) mod principal;
mod verified_tokens;
pub(crate) mod verifier;

pub(crate) use permission::Permission;
pub(crate) use principal::Principal;
pub(crate) use verifier::{Algorithm, AuthConfig, TokenVerifier};
