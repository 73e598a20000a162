//! `POST /v1/inspect` through the real runner: the module rules of SPEC §4.11, the `manifest`
//! export run with nothing, the manifest checks, and the memory cap written into the module.

use std::time::{Duration, Instant};

use crate::support::instance::Runner;
use crate::support::sha256_hex;
use crate::support::upstream::Upstream;
use crate::support::wat::{Fixture, MANIFEST, Script};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use wasmparser::{Parser, Payload};

async fn runner() -> (Upstream, Runner) {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;
    (upstream, runner)
}

/// The default manifest with `changes` merged in at the top level.
fn manifest_with(changes: Value) -> String {
    let mut manifest: Value = serde_json::from_str(MANIFEST).expect("the fixture manifest");
    for (key, value) in changes.as_object().expect("object") {
        manifest[key] = value.clone();
    }
    manifest.to_string()
}

/// A valid module: the default manifest, an `invoke` that answers nothing.
fn base() -> Fixture {
    Fixture::invoke("(i32.const 0)")
}

/// `(initial, maximum)` pages of the module's one memory.
fn memory_limits(bytes: &[u8]) -> (u64, Option<u64>) {
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::MemorySection(section) = payload.expect("the module parses") {
            let memory = section
                .into_iter()
                .next()
                .expect("one memory")
                .expect("memory parses");
            return (memory.initial, memory.maximum);
        }
    }
    panic!("no memory section");
}

/// The capped module of a 200 answer, after checking the answer's own fields against it.
fn capped_module(answer: &Value) -> Vec<u8> {
    let bytes = BASE64
        .decode(answer["moduleBase64"].as_str().expect("moduleBase64"))
        .expect("base64");
    assert_eq!(
        answer["sha256"],
        sha256_hex(&bytes),
        "sha256 names the capped module"
    );
    assert_eq!(answer["size"], bytes.len(), "size is the capped module's");
    bytes
}

/// The refusal `details.code` of a 422 `invalid_module` answer.
fn refusal(status: u16, body: &Value) -> String {
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_module", "{body}");
    body["error"]["details"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no details.code: {body}"))
        .to_owned()
}

#[tokio::test]
async fn a_valid_module_answers_its_capped_bytes_hash_and_manifest() {
    let (upstream, runner) = runner().await;
    let original = Fixture::answering(r#"{"status":"ok","output":{"inspected":true}}"#).bytes();
    let (status, answer) = runner.inspect(&original).await;
    assert_eq!(status, 200, "{answer}");
    let expected_manifest: Value = serde_json::from_str(MANIFEST).expect("json");
    assert_eq!(answer["manifest"], expected_manifest);
    let capped = capped_module(&answer);
    assert_ne!(sha256_hex(&capped), sha256_hex(&original));
    // memoryMiB 16 = 16 * 16 pages of 64 KiB; the initial size is untouched.
    assert_eq!(memory_limits(&original), (2, None));
    assert_eq!(memory_limits(&capped), (2, Some(16 * 16)));

    // Capping is idempotent: the capped module inspects to itself.
    let (status, again) = runner.inspect(&capped).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["sha256"], answer["sha256"]);

    // And the capped module is one the runner calls.
    let module = upstream.add_module(&capped);
    let (status, body) = runner
        .post(
            "/v1/invoke",
            &json!({
                "module": module,
                "app": {"name": "fixture"},
                "call": {"id": "call-inspect-1", "tenantId": "1c9e3f2a-5b7d-4e8f-a0b1-c2d3e4f5a6b7"},
                "action": "run",
                "config": {},
                "input": {},
                "timeoutMs": 2000,
                "memoryMiB": 16
            }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"], json!({"inspected": true}));
}

#[tokio::test]
async fn the_cap_follows_memory_mib_and_never_raises_a_lower_maximum() {
    let (_upstream, runner) = runner().await;
    // No memoryMiB: the default of 64 MiB.
    let mut manifest: Value = serde_json::from_str(MANIFEST).expect("json");
    manifest
        .as_object_mut()
        .expect("object")
        .remove("memoryMiB");
    let fixture = Fixture {
        manifest: Some(manifest.to_string()),
        ..base()
    };
    let (status, answer) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(memory_limits(&capped_module(&answer)).1, Some(64 * 16));

    let fixture = Fixture {
        manifest: Some(manifest_with(json!({"memoryMiB": 100}))),
        ..base()
    };
    let (status, answer) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(memory_limits(&capped_module(&answer)).1, Some(100 * 16));

    // The module's own maximum (100 pages) is below 16 MiB (256 pages): it stays.
    let fixture = Fixture {
        memory: Some("2 100".into()),
        ..base()
    };
    let (status, answer) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(memory_limits(&capped_module(&answer)), (2, Some(100)));

    // An initial memory above the cap is refused.
    let fixture = Fixture {
        memory: Some("300".into()),
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(refusal(status, &body), "invalid_module");
}

#[tokio::test]
async fn each_broken_rule_is_refused_with_its_code() {
    let (_upstream, runner) = runner().await;
    let valid = base().bytes();
    let imported_memory = wat::parse_str(
        r#"(module
            (import "env" "memory" (memory 1))
            (func (export "manifest") (result i32) i32.const 0)
            (func (export "invoke") (result i32) i32.const 0))"#,
    )
    .expect("fixture compiles");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "text bytes",
            b"this is not a module, just some text".to_vec(),
            "not_wasm",
        ),
        (
            "a truncated module",
            valid[..valid.len() / 2].to_vec(),
            "invalid_module",
        ),
        ("the header only", valid[..8].to_vec(), "invalid_module"),
        (
            "env.abort",
            Fixture {
                imports: r#"(import "env" "abort" (func (param i32 i32 i32 i32)))"#.into(),
                ..base()
            }
            .bytes(),
            "forbidden_import",
        ),
        (
            "a WASI socket",
            Fixture {
                imports: r#"(import "wasi_snapshot_preview1" "sock_accept" (func (param i32 i32 i32) (result i32)))"#
                    .into(),
                ..base()
            }
            .bytes(),
            "forbidden_import",
        ),
        (
            "a WASI path function",
            Fixture {
                imports: r#"(import "wasi_snapshot_preview1" "path_open" (func (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))"#
                    .into(),
                ..base()
            }
            .bytes(),
            "forbidden_import",
        ),
        ("an imported memory", imported_memory, "imported_memory"),
        (
            "no invoke export",
            Fixture {
                no_invoke: true,
                ..base()
            }
            .bytes(),
            "missing_export",
        ),
    ];
    for (what, bytes, code) in cases {
        let (status, body) = runner.inspect(&bytes).await;
        assert_eq!(refusal(status, &body), code, "{what}: {body}");
        assert!(body["error"]["requestId"].is_string(), "{what}: {body}");
    }
}

#[tokio::test]
async fn an_invalid_manifest_names_the_field() {
    let (_upstream, runner) = runner().await;
    let fixture = Fixture {
        manifest: Some(manifest_with(json!({"memoryMiB": 8}))),
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(refusal(status, &body), "invalid_module");
    let issues = body["error"]["details"]["issues"]
        .as_array()
        .unwrap_or_else(|| panic!("details.issues: {body}"));
    assert!(
        issues.iter().any(|issue| issue["path"] == "/memoryMiB"),
        "{body}"
    );

    // An answer that is not one JSON document fails like any export's (SPEC §4.10).
    let fixture = Fixture {
        manifest: Some("not a manifest".into()),
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "bad_output");
}

#[tokio::test]
async fn a_manifest_export_that_never_ends_times_out() {
    let (_upstream, runner) = runner().await;
    let fixture = Fixture {
        manifest_prelude: "(loop $spin (br $spin))".into(),
        ..base()
    };
    let started = Instant::now();
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "timeout");
    assert!(started.elapsed() < Duration::from_secs(15), "it ended");
}

#[tokio::test]
async fn the_manifest_export_runs_with_every_platform_function_refusing() {
    let (_upstream, runner) = runner().await;
    // The manifest export traps unless http_send and document_list answer an error and
    // secret_get and config_get find nothing.
    let mut s = Script::new();
    let request = json!({"url": "http://127.0.0.1:9/x"}).to_string();
    let request_block = s.block(&request);
    let send = s.starts_with(
        &format!("(call $http_send {request_block})"),
        r#"{"error":"#,
    );
    let list = s.starts_with("(call $document_list (i64.const 0))", r#"{"error":"#);
    let prelude = format!(
        "(if (i32.eqz {send}) (then unreachable))
         (if (i32.eqz {list}) (then unreachable))
         (if (i64.ne (call $secret_get {secret}) (i64.const 0)) (then unreachable))
         (if (i64.ne (call $config_get {key}) (i64.const 0)) (then unreachable))",
        secret = s.block("API_KEY"),
        key = s.block("greeting"),
    );
    let imports = r#"
      (import "extism:host/user" "http_send" (func $http_send (param i64) (result i64)))
      (import "extism:host/user" "document_list" (func $document_list (param i64) (result i64)))
      (import "extism:host/user" "secret_get" (func $secret_get (param i64) (result i64)))
      (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))"#;
    let fixture = Fixture {
        imports: imports.into(),
        items: s.items(),
        manifest_prelude: prelude,
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["manifest"]["name"], "fixture");

    // The kernel's http_request traps instead of answering: inspection fails.
    let mut s = Script::new();
    let fixture = Fixture {
        imports: r#"(import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))"#.into(),
        manifest_prelude: format!(
            "(drop (call $http_request {} (i64.const 0)))",
            s.block(&request)
        ),
        items: s.items(),
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
}

#[tokio::test]
async fn a_manifest_claiming_a_webhook_needs_the_export() {
    let (_upstream, runner) = runner().await;
    let manifest = manifest_with(json!({"handles": {"webhook": true}}));
    let without = Fixture {
        manifest: Some(manifest.clone()),
        ..base()
    };
    let (status, body) = runner.inspect(&without.bytes()).await;
    assert_eq!(refusal(status, &body), "missing_export");

    let with = Fixture {
        manifest: Some(manifest),
        items: r#"(func (export "handle_webhook") (result i32) (i32.const 0))"#.into(),
        ..base()
    };
    let (status, body) = runner.inspect(&with.bytes()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["manifest"]["handles"]["webhook"], true);
}

#[tokio::test]
async fn a_module_too_costly_to_compile_is_refused_and_the_runner_carries_on() {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[("RUNNER_COMPILE_CPU_SECONDS", "1")]).await;
    // One function of 100,000 additions: about 5 CPU seconds of cranelift in a release build.
    let additions = "(local.set 0 (i32.add (local.get 0) (i32.const 7)))\n".repeat(100_000);
    let fixture = Fixture {
        items: format!("(func $costly (param i32) (result i32) {additions} (local.get 0))"),
        ..base()
    };
    let (status, body) = runner.inspect(&fixture.bytes()).await;
    assert_eq!(refusal(status, &body), "invalid_module");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("1 s of CPU time"), "{body}");

    let (status, body) = runner.inspect(&base().bytes()).await;
    assert_eq!(status, 200, "the runner still inspects: {body}");
}

#[tokio::test]
async fn a_body_over_thirty_two_mib_is_too_large() {
    let (_upstream, runner) = runner().await;
    // A client that waits for `100 Continue` is refused on its head alone, before it sends a
    // byte of the body.
    let head = format!(
        "POST /v1/inspect HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {}\r\n\
         content-type: application/wasm\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n",
        crate::support::RUNNER_TOKEN,
        32 * 1024 * 1024 + 1
    );
    let started = Instant::now();
    let (status, body) = raw_exchange(runner.addr, head.as_bytes()).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered without waiting for the body"
    );
}

#[tokio::test]
async fn a_client_that_sends_a_whole_oversized_body_reads_the_413() {
    let (_upstream, runner) = runner().await;
    let oversized = vec![0u8; 32 * 1024 * 1024 + 4096];
    // Declared length: the runner refuses at the head, then reads the rest so the client, still
    // writing, is not reset before it reads the answer.
    let (status, body) = runner.inspect(&oversized).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "payload_too_large");
    // Chunked: the runner finds out only when the limit is crossed.
    let chunks = oversized
        .chunks(256 * 1024)
        .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
        .collect::<Vec<_>>();
    let response = reqwest::Client::new()
        .post(runner.url("/v1/inspect"))
        .bearer_auth(crate::support::RUNNER_TOKEN)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .expect("the runner answers instead of resetting the connection");
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.expect("an error envelope");
    assert_eq!(body["error"]["code"], "payload_too_large");
}

/// Writes `request` to the runner as it is and reads one answer: its status and JSON body.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            let n = stream.read(&mut buffer).await.expect("read");
            received.extend_from_slice(&buffer[..n]);
            if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&received[..end]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().expect("a length"));
                if received.len() >= end + 4 + length || n == 0 {
                    let status = head[9..12].parse().expect("a status");
                    let body = received
                        .get(end + 4..end + 4 + length)
                        .and_then(|bytes| serde_json::from_slice(bytes).ok())
                        .unwrap_or(Value::Null);
                    return (status, body);
                }
            }
            assert!(n > 0, "the connection closed before an answer");
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("an answer")
}
