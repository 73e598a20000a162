//! Another tenant's apps answer exactly what absent ones answer, on every `:name` and `:id`
//! route (SPEC §1).

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::apps::{Tenant, version_path};
use crate::support::isolation::assert_foreign_is_absent;
use crate::support::modules::scoring;

/// The error answer without its request id.
fn without_request_id(mut body: Value) -> Value {
    if let Some(error) = body["error"].as_object_mut() {
        error.remove("requestId");
    }
    body
}

#[tokio::test]
async fn another_tenants_app_is_absent() {
    let owner = Tenant::new();
    let version = owner.published(scoring("private-kyc", "1.0.0")).await;
    owner
        .store_secret("private-kyc", "API_KEY", "sk-owner")
        .await;
    let install = json!({"versionId": version["id"], "config": {"baseUrl": "http://127.0.0.1:9"}});
    assert_eq!(owner.install("private-kyc", install.clone()).await.0, 200);
    let other = Tenant::new();
    for suffix in ["", "/versions", "/usage"] {
        assert_foreign_is_absent(
            &other.token,
            &format!("/apps/private-kyc{suffix}"),
            &format!("/apps/absent-kyc{suffix}"),
        )
        .await;
    }
    let foreign = version_path(&version);
    let absent = format!("/apps/private-kyc/versions/{}", Uuid::new_v4());
    for (method, suffix) in [
        (Method::POST, "/publish"),
        (Method::POST, "/approve"),
        (Method::POST, "/reject"),
        (Method::DELETE, ""),
    ] {
        let (status, a) = other
            .call(method.clone(), &format!("{foreign}{suffix}"), None)
            .await;
        let (_, b) = other.call(method, &format!("{absent}{suffix}"), None).await;
        assert_eq!(status, 404, "{suffix}: {a}");
        assert_eq!(without_request_id(a), without_request_id(b));
    }
    let (status, refused) = other.install("private-kyc", install).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, _) = other
        .call(Method::DELETE, "/apps/private-kyc/install", None)
        .await;
    assert_eq!(status, 404, "the other tenant has no install of it");
    let (status, _) = other.store_secret("private-kyc", "API_KEY", "x").await;
    assert_eq!(status, 404);
    let (status, _) = other
        .call(
            Method::POST,
            "/apps/private-kyc/test",
            Some(json!({"action": "check", "input": {"name": "x"}})),
        )
        .await;
    assert_eq!(status, 409, "not installed for this tenant");
    let (_, catalogue) = other.call(Method::GET, "/apps", None).await;
    assert!(
        !catalogue.to_string().contains("private-kyc"),
        "not in another tenant's catalogue"
    );
}
