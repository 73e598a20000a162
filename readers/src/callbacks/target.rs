//! A callback session with what running its module takes: the version that started it (its
//! module and manifest) and the tenant's install (config, approved hosts, sealed secrets), read
//! in one round trip. The webhook routes and the hand-off route run a session's module alike.

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
    /// That version's publisher: `None` for the platform's own.
    pub publisher: Option<Uuid>,
    pub version: String,
    pub sha256: String,
    pub manifest: Value,
    /// Whether a platform version's session of another tenant has the same external id: the
    /// platform route cannot tell such sessions apart (always false for a tenant's own version).
    pub shared_with_another_tenant: bool,
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

/// The columns of a [`Target`], from `app_callback_sessions s`, `app_versions v`, the install
/// `i` (left-joined) and its secrets `x` (one pass over them); a macro so queries stay
/// `&'static str`.
macro_rules! target_columns {
    () => {
        "SELECT s.id AS session_id, s.tenant_id, s.app_name, s.action, s.external_id, s.status, \
         s.version_id, v.tenant_id AS publisher, v.version, v.sha256, v.manifest, \
         (v.tenant_id IS NULL AND EXISTS (SELECT 1 FROM app_callback_sessions o \
            JOIN app_versions ov ON ov.id = o.version_id \
            WHERE o.app_name = s.app_name AND o.external_id = s.external_id \
              AND ov.tenant_id IS NULL AND o.tenant_id <> s.tenant_id)) \
           AS shared_with_another_tenant, \
         i.tenant_id IS NOT NULL AS installed, \
         i.config, i.approved_hosts, \
         coalesce(x.secret_names, '{}') AS secret_names, coalesce(x.key_ids, '{}') AS key_ids, \
         coalesce(x.nonces, '{}') AS nonces, coalesce(x.ciphertexts, '{}') AS ciphertexts \
         FROM app_callback_sessions s JOIN app_versions v ON v.id = s.version_id \
         LEFT JOIN app_installs i ON i.tenant_id = s.tenant_id AND i.app_name = s.app_name \
         LEFT JOIN LATERAL (SELECT array_agg(x.name ORDER BY x.name) AS secret_names, \
             array_agg(x.key_id ORDER BY x.name) AS key_ids, \
             array_agg(x.nonce ORDER BY x.name) AS nonces, \
             array_agg(x.ciphertext ORDER BY x.name) AS ciphertexts \
           FROM app_secrets x WHERE x.tenant_id = i.tenant_id AND x.app_name = i.app_name) x \
           ON true "
    };
}
pub(super) use target_columns;
