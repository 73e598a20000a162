//! A callback session with what running its module takes from the tenant's install (config,
//! approved hosts, sealed secrets), read in one round trip. The version that started the
//! session is read apart ([`crate::apps::stored_version`]): a version never changes after upload, so
//! the routes keep it, and a webhook reads only what can change. The webhook routes and the
//! hand-off route run a session's module alike.

use serde_json::Value;
use uuid::Uuid;

use crate::apps::installs::SealedSecret;

/// A callback session with what running its module takes (for a webhook, a hand-off).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Target {
    pub session_id: Uuid,
    pub tenant_id: Uuid,
    pub app_name: String,
    pub action: String,
    pub external_id: String,
    /// `pending`, `completed`, `failed` or `timed_out`.
    pub status: String,
    /// The version that started the session: its module reads the webhook.
    pub version_id: Uuid,
    /// The tenant's install of the app, when it is still installed.
    pub installed: bool,
    pub config: Option<Value>,
    pub approved_hosts: Option<Vec<String>>,
    /// The install's sealed secrets, column by column (one round trip reads everything).
    secret_names: Vec<String>,
    key_ids: Vec<String>,
    nonces: Vec<Vec<u8>>,
    ciphertexts: Vec<Vec<u8>>,
}

impl Target {
    /// The install's secrets as sealed by the API.
    pub fn sealed_secrets(&self) -> Vec<SealedSecret> {
        self.secret_names
            .iter()
            .zip(&self.key_ids)
            .zip(self.nonces.iter().zip(&self.ciphertexts))
            .map(|((name, key_id), (nonce, ciphertext))| SealedSecret {
                name: name.clone(),
                key_id: key_id.clone(),
                nonce: nonce.clone(),
                ciphertext: ciphertext.clone(),
            })
            .collect()
    }
}

/// The columns of a [`Target`], from a session `s`, the install `i` and its secrets `x`
/// ([`install_joins`]); a macro so queries stay `&'static str`.
macro_rules! target_columns {
    () => {
        "s.id AS session_id, s.tenant_id, s.app_name, s.action, s.external_id, s.status, \
         s.version_id, i.tenant_id IS NOT NULL AS installed, i.config, i.approved_hosts, \
         coalesce(x.secret_names, '{}') AS secret_names, coalesce(x.key_ids, '{}') AS key_ids, \
         coalesce(x.nonces, '{}') AS nonces, coalesce(x.ciphertexts, '{}') AS ciphertexts "
    };
}

/// The session `s`'s install `i` (left-joined: an uninstalled app's session is still found)
/// and its secrets `x`, in one pass over them.
macro_rules! install_joins {
    () => {
        " LEFT JOIN app_installs i ON i.tenant_id = s.tenant_id AND i.app_name = s.app_name \
         LEFT JOIN LATERAL (SELECT array_agg(x.name ORDER BY x.name) AS secret_names, \
             array_agg(x.key_id ORDER BY x.name) AS key_ids, \
             array_agg(x.nonce ORDER BY x.name) AS nonces, \
             array_agg(x.ciphertext ORDER BY x.name) AS ciphertexts \
           FROM app_secrets x WHERE x.tenant_id = i.tenant_id AND x.app_name = i.app_name) x \
           ON true "
    };
}
pub(super) use {install_joins, target_columns};
