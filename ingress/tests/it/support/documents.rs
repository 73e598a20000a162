//! A subject's documents for the tests: adding one through the public route, and call tokens
//! minted with the stack's `APP_CALL_TOKEN_SECRET` as the pipeline mints them.

use serde_json::Value;
use topics::call_token::{CallGrant, CallTokenKey};
use uuid::Uuid;

use super::apps::Tenant;
use super::{StackUrls, client, stack};

/// `POST /subjects/:subject/documents?name=` with `bytes` as `content_type`; answers the status
/// and the JSON body.
pub async fn add(
    tenant: &Tenant,
    subject: Uuid,
    name: &str,
    content_type: &str,
    bytes: &[u8],
) -> (u16, Value) {
    let response = client()
        .post(stack().api(&format!("/subjects/{subject}/documents")))
        .query(&[("name", name)])
        .bearer_auth(&tenant.token)
        .header("content-type", content_type)
        .body(bytes.to_vec())
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Adds a document that must be accepted; answers it.
pub async fn added(tenant: &Tenant, subject: Uuid, name: &str, bytes: &[u8]) -> Value {
    let (status, document) = add(tenant, subject, name, "text/plain", bytes).await;
    assert_eq!(status, 201, "{document}");
    document
}

/// The stack's call token key.
pub fn call_token_key() -> CallTokenKey {
    CallTokenKey::new(stack().var("APP_CALL_TOKEN_SECRET").as_bytes()).expect("a usable secret")
}

/// A call token for `grant`, fresh.
pub fn call_token(grant: &CallGrant) -> String {
    call_token_key().mint(grant).expect("signs")
}
