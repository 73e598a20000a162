//! The example vendor app (`runner/examples/vendor-app`, AssemblyScript with the official
//! `@extism/as-pdk`) inspected and called end to end through the real runner, against a small
//! vendor server: a synchronous action over `http_send`, an asynchronous one answering
//! `pending`, and `handle_webhook`.

use std::path::PathBuf;
use std::process::Command;

use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::vendor::{Behaviour, Vendor};
use crate::support::{repo_root, sha256_hex};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

const API_KEY: &str = "sk-example-canary-41";

/// The built module; built here when `./stack test` has not built it already.
fn example_module() -> Vec<u8> {
    let dir = repo_root().join("runner/examples/vendor-app");
    let wasm: PathBuf = dir.join("build/vendor-app.wasm");
    if !wasm.exists() {
        for args in [
            &["ci", "--no-audit", "--no-fund"][..],
            &["run", "build"][..],
        ] {
            let status = Command::new("npm")
                .args(args)
                .current_dir(&dir)
                .status()
                .expect("npm runs (Node.js is needed to build the example app)");
            assert!(status.success(), "npm {args:?} failed");
        }
    }
    std::fs::read(&wasm).expect("the example module is built")
}

fn call(extra: Value, vendor: &Vendor) -> Value {
    let mut request = json!({
        "app": {"name": "vendor-app", "version": "1.0.0"},
        "call": {"id": "call-example-1", "tenantId": "0d8f3e4a-1c2b-4d5e-8f90-a1b2c3d4e5f6"},
        "config": {"baseUrl": vendor.url("")},
        "secrets": {"API_KEY": API_KEY},
        "hosts": ["127.0.0.1"],
        "memoryMiB": 16
    });
    for (key, value) in extra.as_object().expect("object") {
        request[key] = value.clone();
    }
    request
}

#[tokio::test]
async fn the_example_app_is_inspected_and_answers_end_to_end() {
    let original = example_module();
    let vendor = Vendor::start(Behaviour::ByPath(vec![
        ("/score".into(), r#"{"score":0.2}"#.into()),
        ("/sessions".into(), r#"{"sessionId":"s-123"}"#.into()),
    ]))
    .await;
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;

    // Inspect: rules pass, the manifest is read, memoryMiB is written into the module.
    let (status, inspected) = runner.inspect(&original).await;
    assert_eq!(status, 200, "{inspected}");
    assert_eq!(
        runner::check_contract(runner::Definition::InspectAnswer, &inspected),
        Ok(())
    );
    assert_eq!(inspected["manifest"]["name"], "vendor-app");
    assert_eq!(inspected["manifest"]["memoryMiB"], 16);
    let capped = BASE64
        .decode(inspected["moduleBase64"].as_str().expect("module"))
        .expect("base64");
    assert_eq!(inspected["sha256"], sha256_hex(&capped));
    assert_ne!(capped, original, "the memory maximum was written");
    let module = upstream.add_module(&capped);

    // A synchronous action: one vendor request with the secret, one log line.
    let request = call(
        json!({"module": module, "action": "check", "timeoutMs": 5000,
               "input": {"name": "Ada Lovelace", "country": "GB"}}),
        &vendor,
    );
    let (status, body) = runner.post("/v1/invoke", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"],
        json!({"status": "ok", "output": {"score": 0.2, "match": false}})
    );
    assert_eq!(
        body["usage"],
        json!({"httpRequests": 1, "documentReads": 0, "logLines": 1})
    );
    let seen = vendor.last_request().expect("the vendor was called");
    assert_eq!(seen.path, "/score");
    assert!(
        seen.headers
            .contains(&("authorization".into(), format!("Bearer {API_KEY}")))
    );
    let sent: Value = serde_json::from_slice(&seen.body).expect("json body");
    assert_eq!(sent, json!({"name": "Ada Lovelace", "country": "GB"}));

    // An asynchronous action answers pending with the vendor's session id.
    let request = call(
        json!({"module": module, "action": "verify", "timeoutMs": 5000, "input": {"name": "Ada"}}),
        &vendor,
    );
    let (status, body) = runner.post("/v1/invoke", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"],
        json!({"status": "pending", "externalId": "s-123"})
    );

    // The vendor's webhook completes it.
    let webhook = |signature: &str| {
        call(
            json!({"module": module, "request": {
                "method": "POST",
                "headers": {"content-type": "application/json", "x-vendor-signature": signature},
                "query": {},
                "bodyBase64": BASE64.encode(br#"{"sessionId":"s-123","eventId":"e-1","result":"approved"}"#),
            }}),
            &vendor,
        )
    };
    let (status, body) = runner.post("/v1/webhooks/handle", &webhook(API_KEY)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"],
        json!({"status": "event", "event": {"externalId": "s-123", "eventId": "e-1",
               "status": "completed", "output": {"verified": true}}})
    );
    let (_, body) = runner.post("/v1/webhooks/handle", &webhook("forged")).await;
    assert_eq!(body["answer"]["status"], "rejected");

    // Nothing the app answered or logged carries the secret.
    assert!(!body.to_string().contains(API_KEY));
}
