//! A run waiting on a callback session: the tests of webhooks and of the hand-off start here.

use reqwest::Method;
use serde_json::{Value, json};

use super::apps::Tenant;
use super::modules::{manifest, with_webhook};
use crate::runs::{until, workflow};

/// The external id every waiting run's session has (the module's `invoke` answers it).
pub const EXTERNAL_ID: &str = "vendor-session-1";

/// A tenant with app `app` installed whose `check` action is asynchronous (answering pending
/// with [`EXTERNAL_ID`], its output `{verified: boolean}`), whose manifest `handles` as given and
/// whose `handle_webhook` (and `handoff`) answer `answer`; and a run of workflow `app` waiting on
/// it, its output going under `idv`.
pub async fn waiting_run(
    tenant: &Tenant,
    app: &str,
    handles: Value,
    answer: Value,
    timeout_seconds: u64,
) -> Value {
    let mut manifest = manifest(app, "1.0.0");
    manifest["actions"]["check"]["async"] = json!({"callbackTimeoutSeconds": timeout_seconds});
    manifest["actions"]["check"]["output"] = json!({
        "type": "object", "required": ["verified"],
        "properties": {"verified": {"type": "boolean"}}
    });
    manifest["handles"] = handles;
    let pending = json!({"status": "pending", "externalId": EXTERNAL_ID});
    let version = tenant
        .published(with_webhook(&manifest, &pending, &answer))
        .await;
    let secret = tenant.store_secret(app, "API_KEY", "test-secret-value-0123");
    assert_eq!(secret.await.0, 200);
    let install = json!({"versionId": version["id"], "config": {"baseUrl": "http://127.0.0.1:9"}});
    let (status, body) = tenant.install(app, install).await;
    assert_eq!(status, 200, "{body}");
    workflow(
        tenant,
        app,
        json!([{"id": "idv", "type": "call_app", "app": app, "action": "check",
                "input": {"name": "Ada"}, "outputKey": "idv"}]),
    )
    .await;
    let body = json!({"definitionKey": app, "context": {}});
    let (status, run) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 202, "{run}");
    let waiting = until(tenant, &run, &["waiting_callback", "failed", "completed"]).await;
    assert_eq!(waiting["status"], "waiting_callback", "{waiting}");
    waiting
}
