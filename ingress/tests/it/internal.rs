//! The internal listener: module fetch for the runner, and no route shared with the public one.

use schema::module::Sha256;
use uuid::Uuid;

use crate::support::{StackUrls, admin, assert_envelope, client, stack};

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

#[tokio::test]
async fn the_runner_fetches_a_module_with_its_bearer() {
    let bytes = format!("\0asm\x01\0\0\0 module {}", Uuid::new_v4()).into_bytes();
    let sha = put_module(&bytes).await;
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
