//! What the deployment's settings do to the apps routes: a blocked module, and replies when
//! Redis is away (recovered from the inbox, never by applying the command again).

use serde_json::json;

use crate::support::apps::Tenant;
use crate::support::instance::Instance;
use crate::support::modules::scoring;
use crate::support::{client, database};

#[tokio::test]
async fn a_blocked_module_is_not_installable() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("blocked-kyc", "1.0.0")).await;
    let sha = version["sha256"].as_str().expect("sha256");
    let instance =
        Instance::start(&[("APP_BLOCKED_SHA256", &format!("{}, {sha}", "0".repeat(64)))]).await;
    let response = client()
        .put(instance.url("/apps/blocked-kyc/install"))
        .bearer_auth(&tenant.token)
        .json(&json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}}))
        .send()
        .await
        .expect("request");
    crate::support::assert_envelope(response, 409, "app_blocked").await;
}

#[tokio::test]
async fn without_redis_the_answer_comes_from_the_inbox() {
    let tenant = Tenant::new();
    let version = tenant.published(scoring("no-redis", "1.0.0")).await;
    // Nothing listens there: the reply subscription never opens.
    let instance = Instance::start(&[("REDIS_URL", "redis://127.0.0.1:9")]).await;
    let response = client()
        .put(instance.url("/apps/no-redis/install"))
        .bearer_auth(&tenant.token)
        .json(&json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}}))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    let install: serde_json::Value = response.json().await.expect("json");
    assert_eq!(install["versionId"], version["id"]);
    let pool = database().await;
    let applied: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'app.installed'",
    )
    .bind(tenant.id)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(applied, 1, "applied once");
}
