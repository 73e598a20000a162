//! The runner's listener through the real runner: the bearer, methods and unknown paths, the
//! request contract, the error envelope and `x-request-id`, health, readiness and metrics, and
//! how module fetches fail or are saved by the disk cache (SPEC §4.13, §7 "Runner failures").

use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::wat::Fixture;
use crate::support::{RUNNER_TOKEN, sha256_hex};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const TENANT: &str = "2e4f6a8c-0b1d-4f3e-9a5c-7e9b1d3f5a7c";
const ANSWER: &str = r#"{"status":"ok","output":{"routed":true}}"#;

fn invoke_request(module: &str) -> Value {
    json!({
        "module": module,
        "app": {"name": "fixture"},
        "call": {"id": format!("call-{}", uuid::Uuid::new_v4()), "tenantId": TENANT},
        "action": "run",
        "config": {},
        "input": {},
        "timeoutMs": 2000,
        "memoryMiB": 16
    })
}

fn webhook_request(module: &str) -> Value {
    json!({
        "module": module,
        "app": {"name": "fixture"},
        "call": {"id": format!("call-{}", uuid::Uuid::new_v4()), "tenantId": TENANT},
        "config": {},
        "request": {"method": "POST", "headers": {}, "query": {}, "bodyBase64": BASE64.encode("{}")}
    })
}

async fn setup() -> (Upstream, Runner) {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;
    (upstream, runner)
}

/// A URL on which nothing listens (a port just released).
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// One answer: status, headers and the body as JSON (Null when it is not JSON).
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    async fn from(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or(Value::Null);
        Self {
            status,
            headers,
            body,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Checks the error envelope (SPEC §2.1) with `code`, and that the body's request id is
    /// the one in the `x-request-id` header.
    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        let error = self.body["error"]
            .as_object()
            .unwrap_or_else(|| panic!("no error envelope: {}", self.body));
        assert_eq!(error["code"], code, "{}", self.body);
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}",
            self.body
        );
        let id = error["requestId"].as_str().expect("requestId");
        assert_eq!(self.header("x-request-id"), Some(id), "{}", self.body);
        assert_eq!(
            self.body.as_object().map(|o| o.len()),
            Some(1),
            "only `error` at the top: {}",
            self.body
        );
    }
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    Answer::from(request.send().await.expect("runner answers")).await
}

#[tokio::test]
async fn the_v1_routes_need_the_runner_bearer() {
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&Fixture::answering(ANSWER).bytes());
    let http = reqwest::Client::new();
    let url = runner.url("/v1/invoke");

    let none = send(http.post(&url).json(&invoke_request(&module))).await;
    none.assert_error(401, "unauthorized");
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));

    for presented in [
        "Bearer wrong-token".to_owned(),
        format!("Bearer {RUNNER_TOKEN}x"),
        format!("Basic {RUNNER_TOKEN}"),
        RUNNER_TOKEN.to_owned(),
    ] {
        let wrong = send(
            http.post(&url)
                .header("authorization", &presented)
                .json(&invoke_request(&module)),
        )
        .await;
        wrong.assert_error(401, "unauthorized");
        assert_eq!(wrong.header("www-authenticate"), Some("Bearer"));
    }
    let inspect = send(http.post(runner.url("/v1/inspect")).body(b"\0asm".to_vec())).await;
    inspect.assert_error(401, "unauthorized");
    // Nothing was fetched or run for a refused caller.
    assert_eq!(upstream.module_fetches(), 0);

    let right = send(
        http.post(&url)
            .bearer_auth(RUNNER_TOKEN)
            .json(&invoke_request(&module)),
    )
    .await;
    assert_eq!(right.status, 200, "{}", right.body);
    assert_eq!(right.body["answer"]["output"], json!({"routed": true}));
}

#[tokio::test]
async fn wrong_methods_and_unknown_paths_are_refused() {
    let (_upstream, runner) = setup().await;
    let http = reqwest::Client::new();
    for path in [
        "/v1/invoke",
        "/v1/inspect",
        "/v1/webhooks/handle",
        "/v1/handoff",
    ] {
        let answer = send(http.get(runner.url(path)).bearer_auth(RUNNER_TOKEN)).await;
        answer.assert_error(405, "method_not_allowed");
        assert_eq!(answer.header("allow"), Some("POST"), "{path}");
    }
    for path in ["/v1/nothing", "/v1/invoke/extra", "/v1/", "/v1/INVOKE"] {
        let answer = send(
            http.post(runner.url(path))
                .bearer_auth(RUNNER_TOKEN)
                .json(&json!({})),
        )
        .await;
        answer.assert_error(404, "not_found");
        // Without the bearer the runner does not say whether a route exists.
        let anonymous = send(http.post(runner.url(path)).json(&json!({}))).await;
        anonymous.assert_error(401, "unauthorized");
    }
    let anonymous = send(http.get(runner.url("/v1/invoke"))).await;
    anonymous.assert_error(401, "unauthorized");
}

#[tokio::test]
async fn requests_that_break_the_contract_are_bad_requests_naming_the_field() {
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&Fixture::answering(ANSWER).bytes());
    let http = reqwest::Client::new();
    let post = |body: Vec<u8>| {
        http.post(runner.url("/v1/invoke"))
            .bearer_auth(RUNNER_TOKEN)
            .header("content-type", "application/json")
            .body(body)
    };

    let answer = send(post(b"{\"module\": ".to_vec())).await;
    answer.assert_error(400, "bad_request");
    let answer = send(post(b"not json at all".to_vec())).await;
    answer.assert_error(400, "bad_request");

    let issues = |answer: &Answer| -> Vec<(String, String)> {
        answer.body["error"]["details"]["issues"]
            .as_array()
            .unwrap_or_else(|| panic!("details.issues: {}", answer.body))
            .iter()
            .map(|issue| {
                (
                    issue["path"].as_str().expect("path").to_owned(),
                    issue["message"].as_str().expect("message").to_owned(),
                )
            })
            .collect()
    };

    let mut missing = invoke_request(&module);
    missing.as_object_mut().expect("object").remove("timeoutMs");
    let answer = send(post(serde_json::to_vec(&missing).expect("json"))).await;
    answer.assert_error(400, "bad_request");
    let found = issues(&answer);
    assert!(
        found.iter().any(|(path, _)| path == "/timeoutMs"),
        "the missing field is where the issue points: {found:?}"
    );

    let mut unknown = invoke_request(&module);
    unknown["colour"] = json!("red");
    let answer = send(post(serde_json::to_vec(&unknown).expect("json"))).await;
    answer.assert_error(400, "bad_request");
    let found = issues(&answer);
    assert!(
        found.iter().any(|(path, _)| path == "/colour"),
        "the unknown field is where the issue points: {found:?}"
    );
    assert!(
        !found.iter().any(|(_, message)| message.contains("red")),
        "issues never quote values: {found:?}"
    );

    let mut wrong = invoke_request(&module);
    wrong["timeoutMs"] = json!(50);
    wrong["call"]["tenantId"] = json!("not-a-uuid");
    let answer = send(post(serde_json::to_vec(&wrong).expect("json"))).await;
    answer.assert_error(400, "bad_request");
    let paths: Vec<String> = issues(&answer).into_iter().map(|(p, _)| p).collect();
    assert!(paths.contains(&"/timeoutMs".to_owned()), "{paths:?}");
    assert!(paths.contains(&"/call/tenantId".to_owned()), "{paths:?}");

    // None of these reached the module.
    assert_eq!(upstream.module_fetches(), 0);
}

#[tokio::test]
async fn every_answer_carries_the_request_id_and_keeps_a_valid_one_from_the_caller() {
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&Fixture::answering(ANSWER).bytes());
    let http = reqwest::Client::new();

    // A caller's valid id is kept, on errors and on success.
    let mine = "req_test-1.A";
    let answer = send(
        http.post(runner.url("/v1/invoke"))
            .header("x-request-id", mine)
            .json(&invoke_request(&module)),
    )
    .await;
    answer.assert_error(401, "unauthorized");
    assert_eq!(answer.header("x-request-id"), Some(mine));
    let answer = send(
        http.post(runner.url("/v1/nowhere"))
            .header("x-request-id", mine)
            .bearer_auth(RUNNER_TOKEN),
    )
    .await;
    answer.assert_error(404, "not_found");
    assert_eq!(answer.body["error"]["requestId"], mine);
    let answer = send(
        http.post(runner.url("/v1/invoke"))
            .header("x-request-id", mine)
            .bearer_auth(RUNNER_TOKEN)
            .json(&invoke_request(&module)),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("x-request-id"), Some(mine));

    // The operational routes beside /v1 follow the same rule.
    let answer = send(
        http.get(runner.url("/nowhere"))
            .header("x-request-id", mine),
    )
    .await;
    answer.assert_error(404, "not_found");
    assert_eq!(answer.header("x-request-id"), Some(mine));
    let answer = send(http.get(runner.url("/health")).header("x-request-id", mine)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("x-request-id"), Some(mine));

    // An invalid one (a space, or too long) is replaced by a generated UUID.
    for invalid in ["has space".to_owned(), "x".repeat(129)] {
        let answer = send(
            http.post(runner.url("/v1/invoke"))
                .header("x-request-id", &invalid)
                .json(&invoke_request(&module)),
        )
        .await;
        answer.assert_error(401, "unauthorized");
        let id = answer.header("x-request-id").expect("an id");
        assert_ne!(id, invalid);
        assert!(uuid::Uuid::try_parse(id).is_ok(), "{id}");
    }
    // Without one, each answer gets its own.
    let first = send(http.post(runner.url("/v1/invoke"))).await;
    let second = send(http.post(runner.url("/v1/invoke"))).await;
    first.assert_error(401, "unauthorized");
    second.assert_error(401, "unauthorized");
    assert_ne!(first.header("x-request-id"), second.header("x-request-id"));
}

#[tokio::test]
async fn health_is_live_and_ready_when_the_internal_api_answers() {
    let (_upstream, runner) = setup().await;
    let http = reqwest::Client::new();
    let live = send(http.get(runner.url("/health"))).await;
    assert_eq!(live.status, 200);
    assert_eq!(live.body["status"], "ok");
    let ready = send(http.get(runner.url("/health/ready"))).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.body["checks"]["internalApi"], "ok", "{}", ready.body);
}

#[tokio::test]
async fn readiness_names_the_internal_api_when_it_is_down() {
    let runner = Runner::start(&closed_url(), &[]).await;
    let http = reqwest::Client::new();
    let live = send(http.get(runner.url("/health"))).await;
    assert_eq!(live.status, 200, "liveness does not depend on the API");
    let ready = send(http.get(runner.url("/health/ready"))).await;
    ready.assert_error(503, "not_ready");
    assert!(
        ready.body.to_string().contains("internalApi"),
        "{}",
        ready.body
    );
    assert_eq!(
        ready.body["error"]["details"]["checks"]["internalApi"],
        "unreachable"
    );
}

#[tokio::test]
async fn metrics_record_the_duration_of_calls() {
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&Fixture::answering(ANSWER).bytes());
    let (status, body) = runner.post("/v1/invoke", &invoke_request(&module)).await;
    assert_eq!(status, 200, "{body}");
    let text = runner.metrics().await;
    let line = text
        .lines()
        .find(|l| l.starts_with("svc_app_call_duration") && l.contains("app=\"fixture\""))
        .unwrap_or_else(|| panic!("no svc_app_call_duration series for the app:\n{text}"));
    assert!(line.contains("export=\"invoke\""), "{line}");
    assert!(line.contains("outcome=\"ok\""), "{line}");
}

#[tokio::test]
async fn a_module_the_upstream_does_not_have_is_not_found() {
    let (upstream, runner) = setup().await;
    let unknown = sha256_hex(b"no such module");
    let (status, body) = runner.post("/v1/invoke", &invoke_request(&unknown)).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "module_not_found");
    assert_eq!(upstream.module_fetches(), 1);
}

#[tokio::test]
async fn bytes_that_do_not_match_their_hash_are_unavailable() {
    let (upstream, runner) = setup().await;
    let bytes = Fixture::answering(ANSWER).bytes();
    let claimed = sha256_hex(b"another module");
    upstream.add_corrupt_module(&claimed, &bytes);
    let (status, body) = runner.post("/v1/invoke", &invoke_request(&claimed)).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "module_unavailable");
    // Not cached as good: the next call fetches again.
    let (status, _) = runner.post("/v1/invoke", &invoke_request(&claimed)).await;
    assert_eq!(status, 503);
    assert_eq!(upstream.module_fetches(), 2);
}

#[tokio::test]
async fn an_unreachable_internal_api_makes_modules_unavailable() {
    let runner = Runner::start(&closed_url(), &[]).await;
    let module = sha256_hex(&Fixture::answering(ANSWER).bytes());
    let (status, body) = runner.post("/v1/invoke", &invoke_request(&module)).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "module_unavailable");
}

#[tokio::test]
async fn an_export_the_module_lacks_is_a_missing_export() {
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&Fixture::answering(ANSWER).bytes());
    let (status, body) = runner
        .post("/v1/webhooks/handle", &webhook_request(&module))
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "missing_export");
    assert_eq!(body["error"]["details"]["export"], "handle_webhook");

    let mut handoff = webhook_request(&module);
    let object = handoff.as_object_mut().expect("object");
    object.remove("request");
    object.insert("externalId".into(), json!("s-1"));
    let (status, body) = runner.post("/v1/handoff", &handoff).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "missing_export");
    assert_eq!(body["error"]["details"]["export"], "handoff");

    // The module itself is fine: invoke answers.
    let (status, body) = runner.post("/v1/invoke", &invoke_request(&module)).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_restarted_runner_reads_the_compiled_module_from_its_disk_cache() {
    let cache = tempfile::Builder::new()
        .prefix("runner-shared-cache")
        .tempdir()
        .expect("temp dir");
    let bytes = Fixture::answering(ANSWER).bytes();

    let first_upstream = Upstream::start().await;
    let module = first_upstream.add_module(&bytes);
    let first = Runner::start_with_cache(&first_upstream.url(), &[], cache.path()).await;
    let (status, body) = first.post("/v1/invoke", &invoke_request(&module)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(first_upstream.module_fetches(), 1);
    drop(first);
    assert!(
        std::fs::read_dir(cache.path())
            .expect("cache dir")
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with(&module)),
        "the compiled module was written to the cache directory"
    );

    // The second runner's upstream does not have the module any more.
    let second_upstream = Upstream::start().await;
    let second = Runner::start_with_cache(&second_upstream.url(), &[], cache.path()).await;
    let (status, body) = second.post("/v1/invoke", &invoke_request(&module)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"], json!({"routed": true}));
    assert_eq!(second_upstream.module_fetches(), 0);

    // A module that is in neither the cache nor the upstream is still not found.
    let other = sha256_hex(b"never published");
    let (status, _) = second.post("/v1/invoke", &invoke_request(&other)).await;
    assert_eq!(status, 404);
}

/// A fixture whose `export` (besides `invoke`) answers `answer`.
fn exporting(export: &str, answer: &str) -> Fixture {
    const AT: u32 = 20_000;
    let base = Fixture::answering(ANSWER);
    Fixture {
        items: format!(
            "{} (data (i32.const {AT}) \"{}\") \
             (func (export \"{export}\") (result i32) \
               (call $answer (i32.const {AT}) (i32.const {})) (i32.const 0))",
            base.items,
            crate::support::wat::wat_string(answer),
            answer.len()
        ),
        ..base
    }
}

fn handoff_request(module: &str) -> Value {
    let mut request = webhook_request(module);
    let object = request.as_object_mut().expect("object");
    object.remove("request");
    object.insert("externalId".into(), json!("session-1"));
    request
}

#[tokio::test]
async fn hand_off_and_webhook_answers_are_held_to_their_envelopes() {
    let (upstream, runner) = setup().await;
    let handoffs = [
        (r#"{"status":"ok","handoff":null}"#, 200),
        (
            r#"{"status":"ok","handoff":{"sdk":"acme","token":"t-1","expiresAt":"2026-11-23T15:00:00Z"}}"#,
            200,
        ),
        (
            r#"{"status":"error","message":"no session","retryable":false}"#,
            200,
        ),
        (r#"{"status":"ok","handoff":{"sdk":"acme"}}"#, 502),
        (
            r#"{"status":"ok","handoff":{"sdk":"acme","token":"t","expiresAt":"soon"}}"#,
            502,
        ),
        (r#"{"status":"pending","externalId":"x"}"#, 502),
    ];
    for (answer, status) in handoffs {
        let module = upstream.add_module(&exporting("handoff", answer).bytes());
        let (found, body) = runner.post("/v1/handoff", &handoff_request(&module)).await;
        assert_eq!(found, status, "{answer}: {body}");
        if status == 200 {
            let expected: Value = serde_json::from_str(answer).expect("json");
            assert_eq!(body["answer"], expected);
        } else {
            assert_eq!(body["error"]["code"], "bad_output", "{body}");
        }
    }
    let webhooks = [
        (r#"{"status":"ignored"}"#, 200),
        (r#"{"status":"rejected","message":"bad signature"}"#, 200),
        (
            r#"{"status":"event","event":{"externalId":"x","eventId":"e-1","status":"completed","output":{"ok":true}}}"#,
            200,
        ),
        (
            r#"{"status":"event","event":{"externalId":"x","eventId":"e-1","status":"done"}}"#,
            502,
        ),
        (r#"{"status":"ok","output":{}}"#, 502),
    ];
    for (answer, status) in webhooks {
        let module = upstream.add_module(&exporting("handle_webhook", answer).bytes());
        let (found, body) = runner
            .post("/v1/webhooks/handle", &webhook_request(&module))
            .await;
        assert_eq!(found, status, "{answer}: {body}");
    }
}

#[tokio::test]
async fn webhook_and_hand_off_calls_end_at_fifteen_seconds() {
    let (upstream, runner) = setup().await;
    let spinning = Fixture {
        items: format!(
            "{} (func (export \"handle_webhook\") (result i32) (loop $spin (br $spin)) (i32.const 0)) \
             (func (export \"handoff\") (result i32) (loop $spin (br $spin)) (i32.const 0))",
            Fixture::answering(ANSWER).items
        ),
        ..Fixture::answering(ANSWER)
    };
    let module = upstream.add_module(&spinning.bytes());
    let (webhook_body, handoff_body) = (webhook_request(&module), handoff_request(&module));
    let webhook = runner.post("/v1/webhooks/handle", &webhook_body);
    let handoff = runner.post("/v1/handoff", &handoff_body);
    let ((webhook_status, webhook), (handoff_status, handoff)) = tokio::join!(webhook, handoff);
    for (status, body) in [(webhook_status, webhook), (handoff_status, handoff)] {
        assert_eq!(status, 504, "{body}");
        assert_eq!(body["error"]["code"], "timeout");
        assert_eq!(body["error"]["details"]["deadlineMs"], 15_000, "{body}");
    }
}

#[tokio::test]
async fn a_module_refused_at_load_is_answered_again_without_fetching_it() {
    let (upstream, runner) = setup().await;
    let forbidden = Fixture {
        imports: r#"(import "env" "abort" (func (param i32 i32 i32 i32)))"#.into(),
        ..Fixture::answering(ANSWER)
    };
    let module = upstream.add_module(&forbidden.bytes());
    for attempt in 0..3 {
        let (status, body) = runner.post("/v1/invoke", &invoke_request(&module)).await;
        assert_eq!(status, 422, "attempt {attempt}: {body}");
        assert_eq!(body["error"]["details"]["code"], "forbidden_import");
    }
    assert_eq!(upstream.module_fetches(), 1, "the refusal was remembered");
}
