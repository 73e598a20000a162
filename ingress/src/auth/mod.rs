//! Bearer JWT authentication and the permissions a principal holds (SPEC §5, DEVELOPERS.md
//! "Conventions").

pub mod claims;
pub mod mint;
pub mod permission;
pub mod principal;
pub mod verifier;

pub use permission::Permission;
pub use principal::Principal;
pub use verifier::{Algorithm, AuthConfig, TokenVerifier};
