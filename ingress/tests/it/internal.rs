//! The internal listener: module fetch for the runner, and no route shared with the public one.

use schema::module::Sha256;
use uuid::Uuid;

use crate::support::instance::Instance;
use crate::support::{StackUrls, admin, assert_envelope, client, database, stack};

async fn put_module(bytes: &[u8]) -> Sha256 {
    let sha = Sha256::of(bytes);
    let store = ingress::ObjectStore::new(&ingress::StorageConfig {
        endpoint: stack().var("STORAGE_ENDPOINT").into(),
        bucket: stack().var("STORAGE_BUCKET").into(),
        region: stack().var("STORAGE_REGION").into(),
        access_key: stack().var("STORAGE_ACCESS_KEY").into(),
        secret_key: stack().var("STORAGE_SECRET_KEY").into(),
    });
    store
        .put(&ingress::ObjectStore::module_key(&sha), bytes.to_vec())
        .await
        .expect("module stored");
    sha
}

/// Records a version of the module in `status`.
async fn record_version(sha: &Sha256, status: &str) {
    let pool = database().await;
    sqlx::query(
        "INSERT INTO app_versions (id, tenant_id, name, version, sha256, size_bytes, manifest, \
         status, uploaded_by, uploaded_at) \
         VALUES ($1, $2, 'fixture', '1.0.0', $3, 8, '{}', $4, 'test', now())",
    )
    .bind(Uuid::new_v4())
    .bind(Uuid::new_v4())
    .bind(sha.as_str())
    .bind(status)
    .execute(&pool)
    .await
    .expect("version recorded");
}

#[tokio::test]
async fn only_published_modules_that_are_not_blocked_are_served() {
    let bytes = format!("\0asm\x01\0\0\0 gated {}", Uuid::new_v4()).into_bytes();
    let sha = put_module(&bytes).await;
    let path = format!("/internal/app-modules/{sha}");
    let fetch = |url: String| async move {
        client()
            .get(url)
            .bearer_auth(stack().var("APP_RUNNER_TOKEN"))
            .send()
            .await
            .expect("fetch")
    };
    let stored_only = fetch(stack().internal(&path)).await;
    assert_envelope(stored_only, 404, "not_found").await;
    record_version(&sha, "uploaded").await;
    let uploaded = fetch(stack().internal(&path)).await;
    assert_envelope(uploaded, 404, "not_found").await;
    record_version(&sha, "published").await;
    assert_eq!(fetch(stack().internal(&path)).await.status(), 200);
    let blocking = Instance::start(&[("APP_BLOCKED_SHA256", sha.as_str())]).await;
    let blocked = fetch(blocking.internal_url(&path)).await;
    assert_envelope(blocked, 404, "not_found").await;
}

#[tokio::test]
async fn the_runner_fetches_a_module_with_its_bearer() {
    let bytes = format!("\0asm\x01\0\0\0 module {}", Uuid::new_v4()).into_bytes();
    let sha = put_module(&bytes).await;
    record_version(&sha, "published").await;
    let url = stack().internal(&format!("/internal/app-modules/{sha}"));
    let http = client();

    let fetched = http
        .get(&url)
        .bearer_auth(stack().var("APP_RUNNER_TOKEN"))
        .send()
        .await
        .expect("fetch");
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.headers()["content-type"], "application/wasm");
    assert_eq!(
        fetched.bytes().await.expect("bytes").as_ref(),
        bytes.as_slice()
    );

    let anonymous = http.get(&url).send().await.expect("fetch");
    assert_envelope(anonymous, 401, "unauthorized").await;
    let wrong = http
        .get(&url)
        .bearer_auth("not-the-runner")
        .send()
        .await
        .expect("fetch");
    assert_envelope(wrong, 401, "unauthorized").await;
    let user = http
        .get(&url)
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("fetch");
    assert_envelope(user, 401, "unauthorized").await;

    let unknown = http
        .get(stack().internal(&format!("/internal/app-modules/{}", "0".repeat(64))))
        .bearer_auth(stack().var("APP_RUNNER_TOKEN"))
        .send()
        .await
        .expect("fetch");
    assert_envelope(unknown, 404, "not_found").await;
    let malformed = http
        .get(stack().internal("/internal/app-modules/NOT-A-HASH"))
        .bearer_auth(stack().var("APP_RUNNER_TOKEN"))
        .send()
        .await
        .expect("fetch");
    assert_envelope(malformed, 400, "validation_error").await;
}

#[tokio::test]
async fn public_and_internal_routes_do_not_cross() {
    let http = client();
    let sha = "0".repeat(64);
    let on_public = http
        .get(stack().api(&format!("/internal/app-modules/{sha}")))
        .bearer_auth(stack().var("APP_RUNNER_TOKEN"))
        .send()
        .await
        .expect("request");
    assert_envelope(on_public, 404, "not_found").await;
    let on_internal = http
        .get(stack().internal("/app-invocations"))
        .bearer_auth(admin(Uuid::new_v4()))
        .send()
        .await
        .expect("request");
    assert_envelope(on_internal, 404, "not_found").await;
    let metrics_internal = http
        .get(stack().internal("/metrics"))
        .send()
        .await
        .expect("request");
    assert_envelope(metrics_internal, 404, "not_found").await;
}
