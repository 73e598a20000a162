//! What an app call of a run runs on: the tenant's install of the app, its version's module and
//! the action's manifest entry, read in one round trip and checked in SPEC's order: installed
//! (else `unknown_app`), enabled with every secret stored (else `app_not_configured`), module
//! not blocked (`app_blocked`), action declared (`unknown_action`). None of these reaches the
//! install, so none is an invocation record.

use schema::module::Sha256;
use serde_json::Value;
use sqlx::PgPool;
use topics::sealed::Sealed;
use uuid::Uuid;

use crate::Error;

/// A call's install, version and action.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) version_id: Uuid,
    pub(crate) version: String,
    /// The version's publisher: `None` for the platform's own.
    pub(crate) publisher: Option<Uuid>,
    pub(crate) sha256: String,
    /// The manifest with its defaults (`memoryMiB`, each action's `timeoutMs`).
    pub(crate) manifest: Value,
    pub(crate) config: Value,
    pub(crate) hosts: Vec<String>,
    /// The install's sealed secrets, by name.
    pub(crate) secrets: Vec<(String, Sealed)>,
    /// The app's circuit as it stood.
    pub(crate) circuit: Circuit,
}

/// An app's circuit as a call finds it (SPEC §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Circuit {
    /// Calls go out; `failures` counted in a row so far.
    Closed { failures: i32 },
    /// Calls fail at once; `trial_due`: 30 s passed since it opened (or since a trial that
    /// never reported, two minutes ago), so one call may claim the trial.
    Open { trial_due: bool },
}

impl Target {
    /// The action's manifest entry.
    pub(crate) fn action(&self, action: &str) -> &Value {
        &self.manifest["actions"][action]
    }

    /// Whether the manifest declares `needs: ['documents']`: its calls get a call token.
    pub(crate) fn needs_documents(&self) -> bool {
        self.manifest["needs"]
            .as_array()
            .is_some_and(|needs| needs.iter().any(|n| n == "documents"))
    }
}

/// Why a call could not go to the install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// `unknown_app`, `app_not_configured`, `app_blocked` or `unknown_action`.
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    version_id: Uuid,
    version: String,
    publisher: Option<Uuid>,
    sha256: String,
    manifest: Value,
    enabled: bool,
    config: Value,
    approved_hosts: Vec<String>,
    secret_names: Vec<String>,
    key_ids: Vec<String>,
    nonces: Vec<Vec<u8>>,
    ciphertexts: Vec<Vec<u8>>,
    circuit_state: Option<String>,
    circuit_failures: Option<i32>,
    trial_due: Option<bool>,
}

/// The install of `app` that a call of `action` runs on, or why there is none to call.
pub(crate) async fn find(
    pool: &PgPool,
    tenant: Uuid,
    app: &str,
    action: &str,
    blocked: &[Sha256],
) -> Result<Result<Target, Refused>, Error> {
    let row: Option<Row> = sqlx::query_as(
        "SELECT i.version_id, v.version, v.tenant_id AS publisher, v.sha256, v.manifest, \
         i.enabled, i.config, \
         i.approved_hosts, \
         COALESCE(array_agg(s.name ORDER BY s.name) FILTER (WHERE s.name IS NOT NULL), '{}') \
           AS secret_names, \
         COALESCE(array_agg(s.key_id ORDER BY s.name) FILTER (WHERE s.name IS NOT NULL), '{}') \
           AS key_ids, \
         COALESCE(array_agg(s.nonce ORDER BY s.name) FILTER (WHERE s.name IS NOT NULL), '{}') \
           AS nonces, \
         COALESCE(array_agg(s.ciphertext ORDER BY s.name) FILTER (WHERE s.name IS NOT NULL), \
           '{}') AS ciphertexts, \
         c.state AS circuit_state, c.failures AS circuit_failures, \
         (c.state = 'open' AND c.opened_at <= now() - interval '30 seconds') \
           OR (c.state = 'half_open' AND c.trial_started_at <= now() - interval '2 minutes') \
           AS trial_due \
         FROM app_installs i JOIN app_versions v ON v.id = i.version_id \
         LEFT JOIN app_secrets s ON s.tenant_id = i.tenant_id AND s.app_name = i.app_name \
         LEFT JOIN app_circuits c ON c.tenant_id = i.tenant_id AND c.app_name = i.app_name \
         WHERE i.tenant_id = $1 AND i.app_name = $2 \
         GROUP BY i.tenant_id, i.app_name, v.id, c.tenant_id, c.app_name",
    )
    .bind(tenant)
    .bind(app)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(Err(refused(
            "unknown_app",
            format!("{app} is not installed"),
        )));
    };
    Ok(checked(row, app, action, blocked))
}

fn checked(row: Row, app: &str, action: &str, blocked: &[Sha256]) -> Result<Target, Refused> {
    if !row.enabled {
        return Err(refused(
            "app_not_configured",
            format!("the install of {app} is disabled"),
        ));
    }
    let missing = readers::apps::installs::missing(row.manifest.get("secrets"), &row.secret_names);
    if !missing.is_empty() {
        return Err(refused(
            "app_not_configured",
            format!("{app} has secrets without a value: {}", missing.join(", ")),
        ));
    }
    if blocked.iter().any(|b| b.as_str() == row.sha256) {
        return Err(refused(
            "app_blocked",
            format!("the module of {app} {} is blocked", row.version),
        ));
    }
    let manifest = readers::apps::versions::unfold(row.manifest);
    if !manifest["actions"][action].is_object() {
        return Err(refused(
            "unknown_action",
            format!("{app} {} has no action {action}", row.version),
        ));
    }
    let secrets = row
        .secret_names
        .into_iter()
        .zip(row.key_ids)
        .zip(row.nonces.into_iter().zip(row.ciphertexts))
        .map(|((name, key_id), (nonce, ciphertext))| {
            let sealed = Sealed {
                key_id,
                nonce,
                ciphertext,
            };
            (name, sealed)
        })
        .collect();
    let circuit = match row.circuit_state.as_deref() {
        Some("open" | "half_open") => Circuit::Open {
            trial_due: row.trial_due.unwrap_or(false),
        },
        _ => Circuit::Closed {
            failures: row.circuit_failures.unwrap_or(0),
        },
    };
    Ok(Target {
        version_id: row.version_id,
        version: row.version,
        publisher: row.publisher,
        sha256: row.sha256,
        manifest,
        config: row.config,
        hosts: row.approved_hosts,
        secrets,
        circuit,
    })
}

fn refused(code: &'static str, message: String) -> Refused {
    Refused { code, message }
}
