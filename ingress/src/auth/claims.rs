//! The claims of our tokens (DEVELOPERS.md "Conventions").

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::permission::Role;

service::labels! {
    /// The principal kinds of the `kind` claim.
    pub enum Kind {
        Human = "human",
        Machine = "machine",
        Applicant = "applicant",
    }
}

/// Token claims. `exp` is required by the verifier; `iss`/`aud` are checked when configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Claims {
    pub sub: String,
    pub tenant: Uuid,
    #[serde(default)]
    pub name: String,
    pub kind: Kind,
    /// The roles this service knows; the wider service's other roles are ignored, not refused.
    #[serde(default, deserialize_with = "known_roles")]
    pub roles: Vec<Role>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission: Option<Uuid>,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

/// The `roles` claim with every role this service does not know left out: tokens come from the
/// wider service, whose other roles grant nothing here.
fn known_roles<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Role>, D::Error> {
    let names = Vec::<String>::deserialize(deserializer)?;
    Ok(names.iter().filter_map(|name| Role::parse(name)).collect())
}
