//! The module path end to end on the real stack: a module stored in the object store under its
//! hash, served by ingress's internal listener (`GET /internal/app-modules/:sha256`, runner
//! bearer), fetched, verified and run by a runner started through `./stack run runner`.

use std::process::Command;

use crate::support::instance::Runner;
use crate::support::wat::Fixture;
use crate::support::{sha256_hex, stack};
use serde_json::{Value, json};

/// Stores `bytes` as the module `sha256` the way uploads will: `modules/<sha256>.wasm`.
fn put_module(sha256: &str, bytes: &[u8]) {
    let env = stack();
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), bytes).expect("write");
    let url = format!(
        "{}/{}/modules/{sha256}.wasm",
        env.var("STORAGE_ENDPOINT"),
        env.var("STORAGE_BUCKET")
    );
    let output = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
        .arg("--aws-sigv4")
        .arg(format!("aws:amz:{}:s3", env.var("STORAGE_REGION")))
        .arg("--user")
        .arg(format!(
            "{}:{}",
            env.var("STORAGE_ACCESS_KEY"),
            env.var("STORAGE_SECRET_KEY")
        ))
        .arg("-H")
        .arg(format!("x-amz-content-sha256: {}", sha256_hex(bytes)))
        .arg("--data-binary")
        .arg(format!("@{}", file.path().display()))
        .arg(url)
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "200",
        "the object store took the module"
    );
}

/// Records a published version of the module, so ingress serves it (it serves only modules
/// some version publishes or some install runs).
fn publish(sha: &str, size: usize) {
    let sql = format!(
        "INSERT INTO app_versions (id, tenant_id, name, version, sha256, size_bytes, manifest, \
         status, uploaded_by, uploaded_at, published_at) VALUES (gen_random_uuid(), \
         gen_random_uuid(), 'fixture', '1.0.0', '{sha}', {size}, '{{}}', 'published', 'test', \
         now(), now())"
    );
    let output = Command::new("psql")
        .arg(stack().var("DATABASE_URL"))
        .args(["-qAtc", &sql])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn invoke(runner: &Runner, token: &str, module: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(runner.url("/v1/invoke"))
        .bearer_auth(token)
        .json(&json!({
            "module": module,
            "app": {"name": "fixture"},
            "call": {"id": "call-through-ingress", "tenantId": "3f0b8a52-8c9e-4a7e-9d0c-2f6d7c1b5e11"},
            "action": "run",
            "config": {},
            "input": {},
            "timeoutMs": 2000
        }))
        .send()
        .await
        .expect("runner answers");
    (
        response.status().as_u16(),
        response.json().await.expect("json"),
    )
}

#[tokio::test]
async fn a_stored_module_is_fetched_through_ingress_and_run() {
    let token = stack().var("APP_RUNNER_TOKEN").to_owned();
    let answer = format!(
        r#"{{"status":"ok","output":{{"n":"{}"}}}}"#,
        uuid::Uuid::new_v4()
    );
    let bytes = Fixture::answering(&answer).bytes();
    let sha = sha256_hex(&bytes);
    put_module(&sha, &bytes);
    publish(&sha, bytes.len());
    let runner = Runner::start(
        stack().var("API_INTERNAL_URL"),
        &[("APP_RUNNER_TOKEN", token.as_str())],
    )
    .await;

    let (status, body) = invoke(&runner, &token, &sha).await;
    assert_eq!(status, 200, "{body}");
    let expected: Value = serde_json::from_str(&answer).expect("json");
    assert_eq!(body["answer"], expected);

    // A hash nobody stored: ingress answers 404, the runner module_not_found.
    let (status, body) = invoke(&runner, &token, &"0".repeat(64)).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "module_not_found");
}
