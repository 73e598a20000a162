//! A secret's value never leaves the seal: stored, installed with, and used by a test call, a
//! canary value is then searched for in every answer, the services' logs, every segment of the
//! broker's log (the stack's Kafka writes messages uncompressed, so a value sent in clear would
//! be there byte for byte) and a dump of the platform's database: found 0 times. And a
//! ciphertext moved onto another app's row does not open.

use std::path::Path;
use std::process::Command;

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::support::apps::Tenant;
use crate::support::modules::scoring;
use crate::support::{database, repo_root, stack};

/// Whether a data-only dump of the database holds `needle`, searched as pg_dump writes it: the
/// dump of a stack that ran the benchmarks is gigabytes, more than a test may hold.
fn dump_holds(database_url: &str, needle: &str) -> bool {
    let mut child = Command::new("/usr/lib/postgresql/15/bin/pg_dump")
        .args(["--data-only", "--no-owner", database_url])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("pg_dump runs");
    let stdout = child.stdout.take().expect("pg_dump's output");
    let finder = aho_corasick::AhoCorasick::new([needle]).expect("a pattern");
    let found = finder
        .stream_find_iter(stdout)
        .next()
        .map(|found| found.expect("pg_dump's output"))
        .is_some();
    if found {
        let _ = child.kill();
        let _ = child.wait();
    } else {
        assert!(
            child.wait().expect("pg_dump ends").success(),
            "pg_dump failed"
        );
    }
    found
}

#[tokio::test]
async fn a_canary_secret_is_found_nowhere() {
    let canary = format!("canary{}", Uuid::new_v4().simple());
    let tenant = Tenant::new();
    let version = tenant.published(scoring("canary-kyc", "1.0.0")).await;
    let mut answers = Vec::new();
    answers.push(tenant.store_secret("canary-kyc", "API_KEY", &canary).await);
    let install = json!({"versionId": version["id"], "config": {"baseUrl": "http://127.0.0.1:9"}});
    answers.push(tenant.install("canary-kyc", install).await);
    let call = json!({"action": "check", "input": {"name": "Ada"}});
    answers.push(
        tenant
            .call(Method::POST, "/apps/canary-kyc/test", Some(call))
            .await,
    );
    answers.push(tenant.call(Method::GET, "/apps/canary-kyc", None).await);
    answers.push(tenant.call(Method::GET, "/apps", None).await);
    for (status, body) in &answers {
        assert!(*status < 300, "{status} {body}");
        assert!(
            !body.to_string().contains(&canary),
            "an answer holds the secret: {body}"
        );
    }
    // Replace the value, so the old one has travelled twice.
    answers.push(
        tenant
            .store_secret("canary-kyc", "API_KEY", &format!("{canary}-2"))
            .await,
    );

    let database_url = stack().var("DATABASE_URL");
    assert!(
        !dump_holds(database_url, &canary),
        "the database holds the secret"
    );
    let log_dir = repo_root().join(".stack/data/kafka/log");
    let mut files = Vec::new();
    files_under(&log_dir, &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("installs.commands")),
        "the broker's log is at {}",
        log_dir.display()
    );
    // The segments hold the messages (the indexes beside them only offsets and times).
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "log"))
    {
        let bytes = std::fs::read(file).unwrap_or_default();
        assert!(
            !bytes
                .windows(canary.len())
                .any(|window| window == canary.as_bytes()),
            "{} (a topic) holds the secret",
            file.display()
        );
    }
    let logs = repo_root().join(".stack/logs");
    for service in ["ingress", "pipeline", "runner", "broker"] {
        let path = logs.join(format!("{service}.log"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            !text.contains(&canary),
            "{} holds the secret",
            path.display()
        );
    }
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, files);
        } else {
            files.push(path);
        }
    }
}

#[tokio::test]
async fn a_ciphertext_moved_to_another_app_does_not_open() {
    let tenant = Tenant::new();
    let first = tenant.published(scoring("sealed-a", "1.0.0")).await;
    let second = tenant.published(scoring("sealed-b", "1.0.0")).await;
    for (name, version) in [("sealed-a", &first), ("sealed-b", &second)] {
        let body = json!({"versionId": version["id"], "enabled": false, "config": {"baseUrl": "http://127.0.0.1:9"}});
        assert_eq!(tenant.install(name, body).await.0, 200);
    }
    assert_eq!(
        tenant
            .store_secret("sealed-a", "API_KEY", "for-a-only")
            .await
            .0,
        200
    );
    assert_eq!(
        tenant.store_secret("sealed-b", "API_KEY", "for-b").await.0,
        200
    );
    let pool = database().await;
    sqlx::query(
        "UPDATE app_secrets b SET key_id = a.key_id, nonce = a.nonce, ciphertext = a.ciphertext \
         FROM app_secrets a WHERE a.tenant_id = $1 AND a.app_name = 'sealed-a' \
         AND b.tenant_id = $1 AND b.app_name = 'sealed-b' AND a.name = b.name",
    )
    .bind(tenant.id)
    .execute(&pool)
    .await
    .expect("moved");
    let call = json!({"action": "check", "input": {"name": "Ada"}});
    let (status, refused) = tenant
        .call(Method::POST, "/apps/sealed-b/test", Some(call.clone()))
        .await;
    assert_eq!(status, 500, "a moved ciphertext must not open: {refused}");
    let (status, _) = tenant
        .call(Method::POST, "/apps/sealed-a/test", Some(call))
        .await;
    assert_eq!(status, 200, "the original row still opens");
}
