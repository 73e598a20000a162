//! A version's lifecycle (SPEC §3.1): uploaded (admins only), published at once or through an
//! approval request with four-eyes, withdrawn; every wrong-state call 409; every transition
//! with its audit row.

use reqwest::Method;
use serde_json::json;

use crate::support::apps::{Tenant, call_with, version_path};
use crate::support::modules::scoring;
use crate::support::{analyst, database};

async fn audit_actions(tenant: &Tenant) -> Vec<String> {
    let pool = database().await;
    sqlx::query_scalar("SELECT action FROM audit_events WHERE tenant_id = $1 ORDER BY id")
        .bind(tenant.id)
        .fetch_all(&pool)
        .await
        .expect("audit rows")
}

#[tokio::test]
async fn an_upload_is_seen_by_admins_only_until_published_then_withdrawn() {
    let tenant = Tenant::new();
    let (status, version) = tenant.upload(scoring("screening", "1.0.0")).await;
    assert_eq!(status, 201, "{version}");
    assert_eq!(version["status"], "uploaded");
    assert_eq!(version["publisher"], "tenant");
    assert_eq!(version["manifest"]["actions"]["check"]["timeoutMs"], 2000);
    assert_eq!(
        version["manifest"]["capabilities"],
        json!([]),
        "the manifest is unfolded"
    );
    let reader = analyst(tenant.id);
    let (status, _) = call_with(&reader, Method::GET, "/apps/screening", None).await;
    assert_eq!(status, 404, "an uploaded version is for administrators");

    let (status, again) = tenant.upload(scoring("screening", "1.0.0")).await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (409, Some("conflict"))
    );

    let (status, published) = tenant.publish(&version).await;
    assert_eq!(
        (status, published["status"].as_str()),
        (200, Some("published"))
    );
    let (status, _) = tenant.publish(&version).await;
    assert_eq!(status, 409, "publishing twice is a wrong-state call");
    let (status, entry) = call_with(&reader, Method::GET, "/apps/screening", None).await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["latestVersion"]["version"], "1.0.0");

    let (status, newer) = tenant.upload(scoring("screening", "1.10.0")).await;
    assert_eq!(status, 201, "{newer}");
    let (_, versions) = tenant
        .call(Method::GET, "/apps/screening/versions", None)
        .await;
    let order: Vec<&str> = versions["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|v| v["version"].as_str().expect("version"))
        .collect();
    assert_eq!(
        order,
        vec!["1.10.0", "1.0.0"],
        "newest first by semantic version"
    );

    let (status, withdrawn) = tenant
        .call(Method::DELETE, &version_path(&version), None)
        .await;
    assert_eq!(
        (status, withdrawn["status"].as_str()),
        (200, Some("withdrawn"))
    );
    let (status, _) = tenant
        .call(Method::DELETE, &version_path(&version), None)
        .await;
    assert_eq!(status, 409, "withdrawn already");
    let (status, _) = tenant
        .call(Method::DELETE, &version_path(&newer), None)
        .await;
    assert_eq!(status, 409, "an uploaded version is not withdrawn");

    assert_eq!(
        audit_actions(&tenant).await,
        vec![
            "app.uploaded",
            "app.published",
            "app.uploaded",
            "app.withdrawn"
        ]
    );
}

#[tokio::test]
async fn approvals_open_a_request_that_another_admin_decides() {
    let tenant = Tenant::new();
    tenant.set_approvals(true, true).await;
    let (_, version) = tenant.upload(scoring("gated", "2.0.0")).await;
    let (status, requested) = tenant.publish(&version).await;
    assert_eq!(status, 202, "{requested}");
    assert_eq!(requested["status"], "uploaded");
    assert!(
        requested["approvalRequest"]["id"].is_string(),
        "{requested}"
    );
    let (status, _) = tenant.publish(&version).await;
    assert_eq!(status, 409, "a request is already open");

    let (_, open) = tenant.call(Method::GET, "/apps/approvals", None).await;
    assert_eq!(open["total"], 1, "{open}");
    assert_eq!(open["items"][0]["versionId"], version["id"]);

    let approve = format!("{}/approve", version_path(&version));
    let (status, refused) = tenant
        .call(Method::POST, &approve, Some(json!({"comment": "mine"})))
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (403, Some("four_eyes"))
    );

    let reviewer = tenant.other_admin();
    let reject = format!("{}/reject", version_path(&version));
    let (status, rejected) = reviewer
        .call(Method::POST, &reject, Some(json!({"comment": "not yet"})))
        .await;
    assert_eq!(
        (status, rejected["status"].as_str()),
        (200, Some("uploaded"))
    );
    let (status, _) = reviewer.call(Method::POST, &approve, None).await;
    assert_eq!(status, 409, "nothing open to approve");

    let (status, _) = tenant.publish(&version).await;
    assert_eq!(status, 202, "a rejected version can be requested again");
    let (status, approved) = reviewer.call(Method::POST, &approve, None).await;
    assert_eq!(
        (status, approved["status"].as_str()),
        (200, Some("published"))
    );

    let (_, decided) = tenant
        .call(Method::GET, "/apps/approvals?open=false", None)
        .await;
    let decisions: Vec<&str> = decided["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|r| r["decision"].as_str().expect("decision"))
        .collect();
    assert_eq!(
        decisions,
        vec!["approved", "rejected"],
        "newest decision first"
    );
    assert_eq!(
        audit_actions(&tenant).await,
        vec![
            "approval_settings.updated",
            "app.uploaded",
            "app.approval.requested",
            "app.approval.decided",
            "app.approval.requested",
            "app.approval.decided",
            "app.published",
        ]
    );
}

#[tokio::test]
async fn without_four_eyes_the_requester_may_approve() {
    let tenant = Tenant::new();
    tenant.set_approvals(true, false).await;
    let (_, version) = tenant.upload(scoring("solo", "1.0.0")).await;
    assert_eq!(tenant.publish(&version).await.0, 202);
    let approve = format!("{}/approve", version_path(&version));
    let (status, approved) = tenant.call(Method::POST, &approve, None).await;
    assert_eq!(
        (status, approved["status"].as_str()),
        (200, Some("published"))
    );
}

#[tokio::test]
async fn platform_versions_are_visible_to_every_tenant_and_changed_by_none() {
    let tenant = Tenant::new();
    let (status, entry) = tenant.call(Method::GET, "/apps/vendor-app", None).await;
    assert_eq!(
        status, 200,
        "the stack's catalogue carries the example app: {entry}"
    );
    let version = &entry["versions"][0];
    assert_eq!(version["publisher"], "platform");
    assert_eq!(version["status"], "published");
    let (status, refused) = tenant
        .call(Method::DELETE, &version_path(version), None)
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("conflict"))
    );
    let (status, _) = tenant.publish(version).await;
    assert_eq!(status, 409);
}
