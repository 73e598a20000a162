//! A subject's documents (docs/documents.md) through the real stack: added through the public
//! route (bytes in object storage, the record and its audit row by the documents stage), listed
//! and downloaded by people; and read by an app that declares `needs: ['documents']` from a run
//! of the subject, through the call token the pipeline mints and the runner presents to the
//! internal listener. A test call of such an app sees no documents.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::runs::{invocations, until, workflow};
use crate::support::apps::{Tenant, call_with};
use crate::support::documents::{add, added};
use crate::support::modules::{document_reader, documents_manifest};
use crate::support::{StackUrls, analyst, client, database, stack};

/// Uploads, publishes and installs `manifest`'s document reader.
async fn install_reader(tenant: &Tenant, manifest: &Value) {
    let name = manifest["name"].as_str().expect("name");
    let version = tenant.published(document_reader(manifest)).await;
    let (status, install) = tenant
        .install(name, json!({"versionId": version["id"]}))
        .await;
    assert_eq!(status, 200, "{install}");
}

async fn download(token: &str, subject: Uuid, id: &str) -> reqwest::Response {
    client()
        .get(stack().api(&format!("/subjects/{subject}/documents/{id}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn a_document_is_stored_audited_listed_and_downloaded_by_its_tenant_only() {
    let tenant = Tenant::new();
    let subject = Uuid::new_v4();
    let bytes: &[u8] = b"%PDF-1.7 passport \xff\x00";
    let (status, document) =
        add(&tenant, subject, "passport ✓.pdf", "application/pdf", bytes).await;
    assert_eq!(status, 201, "{document}");
    let id = document["id"].as_str().expect("id").to_owned();
    assert_eq!(document["subjectId"], subject.to_string());
    assert_eq!(document["name"], "passport ✓.pdf");
    assert_eq!(document["contentType"], "application/pdf");
    assert_eq!(document["sizeBytes"], bytes.len());
    assert_eq!(
        document["sha256"],
        schema::module::Sha256::of(bytes).to_string()
    );
    let second = added(&tenant, subject, "selfie.txt", b"second").await;

    let path = format!("/subjects/{subject}/documents");
    let (status, page) = tenant.call(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 2);
    assert_eq!(page["items"][0], second, "newest first");
    assert_eq!(page["items"][1], document);

    let downloaded = download(&analyst(tenant.id), subject, &id).await;
    assert_eq!(downloaded.status(), 200);
    let headers = downloaded.headers().clone();
    assert_eq!(headers["content-type"], "application/pdf");
    assert_eq!(headers["content-disposition"], "attachment");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(downloaded.bytes().await.expect("bytes").as_ref(), bytes);

    let pool = database().await;
    let audited: (String, Value) = sqlx::query_as(
        "SELECT actor_id, payload FROM audit_events \
         WHERE tenant_id = $1 AND action = 'document.added' AND subject_id = $2",
    )
    .bind(tenant.id)
    .bind(&id)
    .fetch_one(&pool)
    .await
    .expect("audited");
    assert_eq!(audited.1["name"], "passport ✓.pdf");
    assert_eq!(audited.1["sizeBytes"], bytes.len());

    // Another tenant, or another subject of the same tenant, finds nothing.
    let stranger = Tenant::new();
    assert_eq!(download(&stranger.token, subject, &id).await.status(), 404);
    let (_, empty) = stranger.call(Method::GET, &path, None).await;
    assert_eq!(empty["total"], 0, "{empty}");
    assert_eq!(
        download(&tenant.token, Uuid::new_v4(), &id).await.status(),
        404
    );

    // Analysts read documents but do not add them.
    let reader = Tenant {
        id: tenant.id,
        token: analyst(tenant.id),
    };
    let (status, refused) = add(&reader, subject, "x.txt", "text/plain", b"x").await;
    assert_eq!(status, 403, "{refused}");
}

#[tokio::test]
async fn a_document_needs_a_name_a_media_type_and_between_one_byte_and_16_mib() {
    let tenant = Tenant::new();
    let subject = Uuid::new_v4();
    let issue = |body: &Value| body["error"]["details"]["issues"][0].clone();

    let url = stack().api(&format!("/subjects/{subject}/documents"));
    let nameless = client()
        .post(&url)
        .bearer_auth(&tenant.token)
        .body("x")
        .send()
        .await
        .expect("request");
    assert_eq!(nameless.status(), 400);
    let body: Value = nameless.json().await.expect("json");
    assert_eq!(issue(&body)["path"], "name", "{body}");

    let (status, body) = add(&tenant, subject, &"n".repeat(256), "text/plain", b"x").await;
    assert_eq!((status, issue(&body)["path"].clone()), (400, json!("name")));
    let (status, body) = add(&tenant, subject, "a\tb", "text/plain", b"x").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = add(&tenant, subject, "x", "not a type", b"x").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        issue(&body),
        json!({"in": "header", "path": "content-type",
        "message": "must be a media type such as application/pdf, at most 255 characters"})
    );
    let (status, body) = add(&tenant, subject, "x", "text/plain", b"").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = add(&tenant, subject, "x", "text/plain", b"x").await;
    assert_eq!(status, 201, "{body}");

    let path = "/subjects/not-a-uuid/documents";
    let (status, _) = tenant.call(Method::GET, path, None).await;
    assert_eq!(status, 400);

    let too_large = vec![0u8; 16 * 1024 * 1024 + 1];
    let (status, body) = add(
        &tenant,
        subject,
        "big.bin",
        "application/octet-stream",
        &too_large,
    )
    .await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = add(
        &tenant,
        subject,
        "limit.bin",
        "application/octet-stream",
        &too_large[1..],
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["sizeBytes"], 16 * 1024 * 1024);
}

#[tokio::test]
async fn a_run_of_a_subject_lists_and_reads_that_subjects_documents_and_no_others() {
    let tenant = Tenant::new();
    let subject = Uuid::new_v4();
    install_reader(&tenant, &documents_manifest("docs-reader", "1.0.0")).await;
    let steps = json!([{"id": "docs", "type": "call_app", "app": "docs-reader",
                        "action": "check", "input": {}, "outputKey": "docs"}]);
    workflow(&tenant, "documents", steps).await;

    let older = added(&tenant, subject, "older.txt", b"the older document").await;
    let newer = added(&tenant, subject, "newer.txt", b"the newer one").await;
    // Neither another subject's document nor another tenant's of the same subject is the call's.
    added(&tenant, Uuid::new_v4(), "elsewhere.txt", b"another subject").await;
    added(&Tenant::new(), subject, "foreign.txt", b"another tenant").await;

    let body = json!({"definitionKey": "documents", "subjectId": subject, "context": {}});
    let (status, run) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 202, "{run}");
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");

    let output = &run["context"]["docs"];
    let listed: Vec<&Value> = output["list"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .collect();
    assert_eq!(listed.len(), 2, "{output}");
    for (item, document) in listed.iter().zip([&newer, &older]) {
        assert_eq!(item["id"], document["id"]);
        assert_eq!(item["name"], document["name"]);
        assert_eq!(item["contentType"], "text/plain");
        assert_eq!(item["size"], document["sizeBytes"]);
    }
    assert_eq!(
        output["read"],
        json!({"id": newer["id"], "contentType": "text/plain", "size": 13,
               "bodyBase64": BASE64.encode(b"the newer one")})
    );

    let records = invocations(&tenant, &run).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["status"], "success");
    assert_eq!(records[0]["usage"]["documentReads"], 2, "{}", records[0]);
    // The call token is in the runner request only: a JWT starts with `eyJ`.
    assert!(!records[0].to_string().contains("eyJ"), "{}", records[0]);
}

#[tokio::test]
async fn a_run_without_a_subject_and_a_test_call_see_no_documents() {
    let tenant = Tenant::new();
    install_reader(&tenant, &documents_manifest("docs-tested", "1.0.0")).await;
    added(&tenant, Uuid::new_v4(), "someone.txt", b"a subject's").await;

    let (status, tested) = call_with(
        &tenant.token,
        Method::POST,
        "/apps/docs-tested/test",
        Some(json!({"action": "check", "input": {}})),
    )
    .await;
    assert_eq!(status, 200, "{tested}");
    assert_eq!(tested["status"], "success", "{tested}");
    assert_eq!(
        tested["output"],
        json!({"list": {"items": []}, "read": null})
    );
    assert_eq!(tested["usage"]["documentReads"], 1);

    let steps = json!([{"id": "docs", "type": "call_app", "app": "docs-tested",
                        "action": "check", "input": {}, "outputKey": "docs"}]);
    workflow(&tenant, "no-subject", steps).await;
    let body = json!({"definitionKey": "no-subject", "context": {}});
    let (status, run) = tenant
        .call(Method::POST, "/workflow-runs", Some(body))
        .await;
    assert_eq!(status, 202, "{run}");
    let run = until(&tenant, &run, &["completed", "failed"]).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["context"]["docs"],
        json!({"list": {"items": []}, "read": null})
    );
}
