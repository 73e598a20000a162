//! The internal listener: module and document fetch for the runner, and no route shared with
//! the public one.

use std::time::{SystemTime, UNIX_EPOCH};

use schema::module::Sha256;
use topics::call_token::{CallGrant, CallTokenKey, LIFETIME};
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::documents::{added, call_token, call_token_key};
use crate::support::instance::Instance;
use crate::support::{
    StackUrls, admin, assert_envelope, client, database, metrics_at, sample, stack,
};

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

/// `GET` of the internal listener's `path` with `token` as the bearer (none: `None`).
async fn fetch_with(path: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = client().get(stack().internal(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("fetch")
}

#[tokio::test]
async fn a_call_token_lists_and_reads_the_documents_of_its_tenant_and_subject() {
    let tenant = Tenant::new();
    let subject = Uuid::new_v4();
    let mine = added(&tenant, subject, "mine.txt", b"my document").await;
    let elsewhere = added(&tenant, Uuid::new_v4(), "other.txt", b"other subject").await;
    let foreign = added(&Tenant::new(), subject, "foreign.txt", b"other tenant").await;
    let grant = CallGrant {
        tenant: tenant.id,
        call: Uuid::now_v7(),
        subject: Some(subject),
    };
    let token = call_token(&grant);
    let base = format!("/internal/app-calls/{}/documents", grant.call);

    let listed = fetch_with(&base, Some(&token)).await;
    assert_eq!(listed.status(), 200);
    let listed: serde_json::Value = listed.json().await.expect("json");
    assert_eq!(
        listed,
        serde_json::json!({"items": [{"id": mine["id"], "name": "mine.txt",
                                      "contentType": "text/plain", "size": 11}]})
    );
    let read = fetch_with(
        &format!("{base}/{}", mine["id"].as_str().expect("id")),
        Some(&token),
    )
    .await;
    assert_eq!(read.status(), 200);
    assert_eq!(read.headers()["content-type"], "text/plain");
    assert_eq!(read.bytes().await.expect("bytes").as_ref(), b"my document");

    for other in [&elsewhere, &foreign] {
        let path = format!("{base}/{}", other["id"].as_str().expect("id"));
        assert_envelope(fetch_with(&path, Some(&token)).await, 404, "not_found").await;
    }
    let malformed = fetch_with(&format!("{base}/not-a-uuid"), Some(&token)).await;
    assert_envelope(malformed, 400, "validation_error").await;

    // A call without a subject is granted nothing.
    let no_subject = CallGrant {
        subject: None,
        ..grant
    };
    let token = call_token(&no_subject);
    let listed = fetch_with(&base, Some(&token)).await;
    assert_eq!(listed.status(), 200);
    let listed: serde_json::Value = listed.json().await.expect("json");
    assert_eq!(listed, serde_json::json!({"items": []}));
    let path = format!("{base}/{}", mine["id"].as_str().expect("id"));
    assert_envelope(fetch_with(&path, Some(&token)).await, 404, "not_found").await;
}

#[tokio::test]
async fn document_fetches_refuse_every_token_but_the_calls_own() {
    let tenant = Tenant::new();
    let subject = Uuid::new_v4();
    let document = added(&tenant, subject, "kept.txt", b"kept").await;
    let grant = CallGrant {
        tenant: tenant.id,
        call: Uuid::now_v7(),
        subject: Some(subject),
    };
    let list = format!("/internal/app-calls/{}/documents", grant.call);
    let read = format!("{list}/{}", document["id"].as_str().expect("id"));
    assert_eq!(
        fetch_with(&read, Some(&call_token(&grant))).await.status(),
        200,
        "the call's own token passes"
    );

    let other_call = call_token(&CallGrant {
        call: Uuid::now_v7(),
        ..grant
    });
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let expired = call_token_key()
        .mint_at(&grant, now - LIFETIME.as_secs() - 1)
        .expect("signs");
    let forged = CallTokenKey::new(b"not-the-deployment-s-call-token-secret")
        .expect("key")
        .mint(&grant)
        .expect("signs");
    let refused = [
        ("another call's", Some(other_call.as_str())),
        ("expired", Some(expired.as_str())),
        ("forged", Some(forged.as_str())),
        ("the runner's", Some(stack().var("APP_RUNNER_TOKEN"))),
        ("a user's", Some(tenant.token.as_str())),
        ("none", None),
    ];
    for (which, token) in refused {
        for path in [&list, &read] {
            let answer = fetch_with(path, token).await;
            assert_eq!(answer.status(), 401, "{which} token on {path}");
            assert_envelope(answer, 401, "unauthorized").await;
        }
    }
}

/// The internal listener's requests are measured as the public listener's are (SPEC "Metrics":
/// `http.server.request.duration` by route and status), its health and metrics aside.
#[tokio::test]
async fn internal_requests_are_measured_and_its_health_is_not() {
    let instance = Instance::start(&[]).await;
    let http = client();
    let unknown = instance.internal_url(&format!("/internal/app-modules/{}", "0".repeat(64)));
    let anonymous = http.get(&unknown).send().await.expect("fetch");
    assert_eq!(anonymous.status(), 401);
    let health = http
        .get(instance.internal_url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let text = metrics_at(&instance.url("/metrics")).await;
    let labels = [
        ("http_route", "/internal/app-modules/{sha256}"),
        ("http_response_status_code", "401"),
    ];
    let counted = sample(&text, "http_server_request_duration_count", &labels);
    assert_eq!(counted, Some(1.0), "{text}");
    assert!(!text.contains("http_route=\"/health\""), "{text}");
}
