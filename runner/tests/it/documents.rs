//! `document_list` and `document_read` through the real runner: a WAT module lists and reads
//! documents and answers what it got; the upstream stand-in serves the call's documents for
//! (call id, call token) and counts the fetches.

use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::wat::{Fixture, Script, put_block};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

const TENANT: &str = "7a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const TOKEN: &str = "call-token-of-this-call";

const DOCUMENTS: &str = r#"
  (import "extism:host/user" "document_list" (func $document_list (param i64) (result i64)))
  (import "extism:host/user" "document_read" (func $document_read (param i64) (result i64)))"#;

/// A module that lists the documents when `list` is set, then reads each of `reads` in turn,
/// and answers `{"list": <answer or null>, "reads": [<answer>, ...]}`.
fn reader(list: bool, reads: &[&str]) -> Fixture {
    let mut s = Script::new();
    let mut body = vec![s.put(r#"{"status":"ok","output":{"list":"#)];
    if list {
        body.push(put_block("(call $document_list (i64.const 0))"));
    } else {
        body.push(s.put("null"));
    }
    body.push(s.put(r#","reads":["#));
    for (i, id) in reads.iter().enumerate() {
        if i > 0 {
            body.push(s.put(","));
        }
        body.push(put_block(&format!("(call $document_read {})", s.block(id))));
    }
    body.push(s.put("]}}"));
    s.invoke(DOCUMENTS, &body.concat())
}

struct Setup {
    upstream: Upstream,
    runner: Runner,
    call_id: String,
}

async fn setup() -> Setup {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;
    Setup {
        upstream,
        runner,
        call_id: format!("call-{}", uuid::Uuid::new_v4()),
    }
}

impl Setup {
    /// Invokes `fixture` for this setup's call, with `token` as the call token (none: `None`).
    async fn invoke(&self, fixture: &Fixture, token: Option<&str>) -> (u16, Value) {
        let module = self.upstream.add_module(&fixture.bytes());
        let mut request = json!({
            "module": module,
            "app": {"name": "fixture"},
            "call": {"id": self.call_id, "tenantId": TENANT},
            "action": "run",
            "config": {},
            "input": {},
            "timeoutMs": 5000,
            "memoryMiB": 16
        });
        if let Some(token) = token {
            request["callToken"] = json!(token);
        }
        self.runner.post("/v1/invoke", &request).await
    }

    /// Invokes `fixture` and answers its output and usage (the call must answer `ok`).
    /// Gives the call one plain-text document `x`; answers its id.
    fn add_text_document(&self) -> String {
        let id = new_id();
        self.upstream
            .add_document(&self.call_id, TOKEN, &id, "text/plain", b"x");
        id
    }

    async fn output(&self, fixture: &Fixture, token: Option<&str>) -> (Value, Value) {
        let (status, body) = self.invoke(fixture, token).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["answer"]["status"], "ok", "{body}");
        (body["answer"]["output"].clone(), body["usage"].clone())
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test]
async fn a_call_with_its_token_lists_and_reads_its_documents() {
    let setup = setup().await;
    let (text, binary, unknown) = (new_id(), new_id(), new_id());
    let pdf: &[u8] = &[0x25, 0x50, 0x44, 0x46, 0xff, 0x00, 0xfe, 0x0a];
    setup.upstream.add_document(
        &setup.call_id,
        TOKEN,
        &text,
        "text/plain",
        b"hello document",
    );
    setup
        .upstream
        .add_document(&setup.call_id, TOKEN, &binary, "application/pdf", pdf);

    let fixture = reader(true, &[&text, &binary, &unknown]);
    let (out, usage) = setup.output(&fixture, Some(TOKEN)).await;

    let mut listed: Vec<&str> = out["list"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].as_str().expect("id"))
        .collect();
    listed.sort_unstable();
    let mut expected = vec![text.as_str(), binary.as_str()];
    expected.sort_unstable();
    assert_eq!(listed, expected, "{out}");

    assert_eq!(
        out["reads"][0],
        json!({"id": text, "contentType": "text/plain", "size": 14,
               "bodyBase64": BASE64.encode(b"hello document")})
    );
    assert_eq!(
        out["reads"][1],
        json!({"id": binary, "contentType": "application/pdf", "size": pdf.len(),
               "bodyBase64": BASE64.encode(pdf)})
    );
    assert_eq!(out["reads"][2]["error"]["code"], "not_found", "{out}");
    // The list and three reads, each counted and each fetched once.
    assert_eq!(usage["documentReads"], 4);
    assert_eq!(setup.upstream.document_fetches(), 4);
}

#[tokio::test]
async fn the_eleventh_read_is_refused_without_a_fetch() {
    let setup = setup().await;
    let id = setup.add_text_document();
    let reads = vec![id.as_str(); 11];
    let (out, usage) = setup.output(&reader(false, &reads), Some(TOKEN)).await;
    let reads = out["reads"].as_array().expect("reads");
    assert_eq!(reads.len(), 11);
    for read in &reads[..10] {
        assert_eq!(read["bodyBase64"], BASE64.encode(b"x"), "{read}");
    }
    assert_eq!(reads[10]["error"]["code"], "too_many_reads", "{out}");
    assert_eq!(usage["documentReads"], 10);
    assert_eq!(setup.upstream.document_fetches(), 10);
}

#[tokio::test]
async fn a_list_counts_against_the_same_ten_reads() {
    let setup = setup().await;
    let id = setup.add_text_document();
    let reads = vec![id.as_str(); 10];
    let (out, usage) = setup.output(&reader(true, &reads), Some(TOKEN)).await;
    assert!(out["list"]["items"].is_array(), "{out}");
    assert_eq!(out["reads"][8]["bodyBase64"], BASE64.encode(b"x"), "{out}");
    assert_eq!(out["reads"][9]["error"]["code"], "too_many_reads", "{out}");
    assert_eq!(usage["documentReads"], 10);
    assert_eq!(setup.upstream.document_fetches(), 10);
}

#[tokio::test]
async fn without_a_call_token_documents_are_not_allowed_and_nothing_is_fetched() {
    let setup = setup().await;
    let id = setup.add_text_document();
    let (out, usage) = setup.output(&reader(true, &[&id]), None).await;
    assert_eq!(out["list"]["error"]["code"], "not_allowed", "{out}");
    assert_eq!(out["reads"][0]["error"]["code"], "not_allowed", "{out}");
    assert!(out["reads"][0]["error"]["message"].is_string(), "{out}");
    assert_eq!(usage["documentReads"], 0);
    assert_eq!(setup.upstream.document_fetches(), 0);
}

#[tokio::test]
async fn a_wrong_call_token_is_refused() {
    let setup = setup().await;
    let id = setup.add_text_document();
    let (out, _) = setup
        .output(&reader(true, &[&id]), Some("someone-elses-token"))
        .await;
    assert_eq!(out["list"]["error"]["code"], "refused", "{out}");
    assert_eq!(out["reads"][0]["error"]["code"], "refused", "{out}");
    assert!(
        !out.to_string().contains("bodyBase64"),
        "nothing was read: {out}"
    );
}

#[tokio::test]
async fn a_document_id_that_is_not_a_uuid_is_an_invalid_request_and_never_fetched() {
    let setup = setup().await;
    // A document exists: the bad ids are refused for their shape, not for finding nothing.
    setup.add_text_document();
    let (out, _) = setup
        .output(
            &reader(false, &["not-a-uuid", "../../app-modules/x", ""]),
            Some(TOKEN),
        )
        .await;
    for read in out["reads"].as_array().expect("reads") {
        assert_eq!(read["error"]["code"], "invalid_request", "{out}");
    }
    assert_eq!(setup.upstream.document_fetches(), 0);
}
