//! `POST /apps/uploads` refusals (SPEC §4.7 rule 6, §4.11).

use serde_json::json;

use crate::support::apps::Tenant;
use crate::support::modules::{manifest, module};
use crate::support::{StackUrls, analyst, assert_envelope, client, stack};

async fn upload(token: &str, content_type: &str, body: Vec<u8>) -> reqwest::Response {
    client()
        .post(stack().api("/apps/uploads"))
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn only_wasm_bodies_are_taken() {
    let tenant = Tenant::new();
    let response = upload(&tenant.token, "application/json", b"{}".to_vec()).await;
    assert_envelope(response, 415, "unsupported_media_type").await;
    let response = upload(&tenant.token, "application/wasm", b"not a module".to_vec()).await;
    let body = assert_envelope(response, 400, "validation_error").await;
    assert_eq!(body["error"]["details"]["code"], "not_wasm", "{body}");
    let reader = analyst(tenant.id);
    let response = upload(&reader, "application/wasm", b"\0asm".to_vec()).await;
    assert_envelope(response, 403, "forbidden").await;
}

#[tokio::test]
async fn a_bad_manifest_is_refused_with_its_issues() {
    let tenant = Tenant::new();
    let mut bad = manifest("bad-manifest", "not-semver");
    bad["memoryMiB"] = json!(8);
    let bytes = module(&bad, &json!({"status": "ok", "output": {}}));
    let response = upload(&tenant.token, "application/wasm", bytes).await;
    let body = assert_envelope(response, 400, "validation_error").await;
    assert_eq!(body["error"]["details"]["code"], "invalid_module", "{body}");
    let issues = body["error"]["details"]["issues"]
        .as_array()
        .expect("issues");
    for path in ["/version", "/memoryMiB"] {
        assert!(
            issues
                .iter()
                .any(|i| i["path"] == path && i["in"] == "body"),
            "{path}: {body}"
        );
    }
}

#[tokio::test]
async fn a_body_over_32_mib_is_refused() {
    let tenant = Tenant::new();
    let response = upload(
        &tenant.token,
        "application/wasm",
        vec![0; 32 * 1024 * 1024 + 1],
    )
    .await;
    assert_envelope(response, 413, "payload_too_large").await;
}
