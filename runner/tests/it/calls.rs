//! `/v1/invoke` against the real runner (started through `./stack run runner`), with WAT
//! fixtures for each failure and limit of SPEC §7 "Runner failures" and §8.

use std::time::{Duration, Instant};

use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::vendor::{Behaviour, Vendor};
use crate::support::wat::{Fixture, SCRATCH, wat_string};
use serde_json::{Value, json};

const TENANT: &str = "3f0b8a52-8c9e-4a7e-9d0c-2f6d7c1b5e11";
const SECRET: &str = "sk-canary-7f3a9";

fn invoke_request(module: &str, timeout_ms: u64) -> Value {
    json!({
        "module": module,
        "app": {"name": "fixture"},
        "call": {"id": format!("call-{}", uuid::Uuid::new_v4()), "tenantId": TENANT},
        "action": "run",
        "config": {"greeting": "hello"},
        "input": {"name": "Ada"},
        "secrets": {"API_KEY": SECRET},
        "hosts": ["127.0.0.1"],
        "timeoutMs": timeout_ms,
        "memoryMiB": 16
    })
}

async fn setup() -> (Upstream, Runner) {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;
    (upstream, runner)
}

async fn invoke(runner: &Runner, upstream: &Upstream, fixture: &Fixture) -> (u16, Value) {
    let module = upstream.add_module(&fixture.bytes());
    runner
        .post("/v1/invoke", &invoke_request(&module, 2000))
        .await
}

#[tokio::test]
async fn a_module_answer_comes_back_with_usage_and_duration() {
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(
        &runner,
        &upstream,
        &Fixture::answering(r#"{"status":"ok","output":{"score":0.2}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"],
        json!({"status": "ok", "output": {"score": 0.2}})
    );
    assert_eq!(
        body["usage"],
        json!({"httpRequests": 0, "documentReads": 0, "logLines": 0})
    );
    assert!(body["durationMs"].as_f64().is_some());
    assert_eq!(
        runner::check_contract(runner::Definition::CallAnswer, &body),
        Ok(()),
        "the answer follows schema/runner/contract.json"
    );
    // The second call uses the cached module: no second fetch.
    let module = upstream
        .add_module(&Fixture::answering(r#"{"status":"ok","output":{"score":0.2}}"#).bytes());
    let (status, _) = runner
        .post("/v1/invoke", &invoke_request(&module, 2000))
        .await;
    assert_eq!(status, 200);
    assert_eq!(upstream.module_fetches(), 1);
}

#[tokio::test]
async fn the_input_document_reaches_the_module() {
    // Echoes the whole input document as the output of an ok answer.
    let prefix = r#"{"status":"ok","output":"#;
    let fixture = Fixture {
        invoke: format!(
            r#"(local $len i32)
            (local.set $len (i32.const {plen}))
            ;; append the input after the prefix
            (local.set $len (i32.add (local.get $len)
                (call $copy_input (i32.add (i32.const {p}) (i32.const {plen})))))
            (i32.store8 (i32.add (i32.const {p}) (local.get $len)) (i32.const 125))
            (call $answer (i32.const {p}) (i32.add (local.get $len) (i32.const 1)))
            (i32.const 0)"#,
            p = SCRATCH,
            plen = prefix.len()
        ),
        items: format!(
            r#"(data (i32.const {p}) "{text}")
            (func $copy_input (param $dst i32) (result i32)
              (local $i i32) (local $len i32)
              (local.set $len (i32.wrap_i64 (call $input_length)))
              (block $done (loop $copy
                (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
                (i32.store8 (i32.add (local.get $dst) (local.get $i))
                            (call $input_load_u8 (i64.extend_i32_u (local.get $i))))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $copy)))
              (local.get $len))"#,
            p = SCRATCH,
            text = wat_string(prefix)
        ),
        ..Fixture::default()
    };
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 200, "{body}");
    let seen = &body["answer"]["output"];
    assert_eq!(seen["action"], "run");
    assert_eq!(seen["input"], json!({"name": "Ada"}));
    assert_eq!(seen["config"], json!({"greeting": "hello"}));
    assert_eq!(seen["call"]["tenantId"], TENANT);
    assert!(
        seen.get("secrets").is_none(),
        "secrets are not part of the input"
    );
}

#[tokio::test]
async fn an_infinite_loop_stops_at_its_deadline_as_timeout() {
    let (upstream, runner) = setup().await;
    let module =
        upstream.add_module(&Fixture::invoke("(loop $spin (br $spin)) (i32.const 0)").bytes());
    let started = Instant::now();
    let (status, body) = runner
        .post("/v1/invoke", &invoke_request(&module, 300))
        .await;
    let elapsed = started.elapsed();
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "timeout");
    assert_eq!(
        body["usage"]["logLines"], 0,
        "a call that ran reports its usage"
    );
    // Its duration is what its deadline covered, this first call's fetch and compilation too.
    assert!(
        body["durationMs"].as_f64().is_some_and(|ms| ms >= 300.0),
        "{body}"
    );
    // Behaviour, not a benchmark: the call ended (it did not run on), and not before its
    // deadline. The overshoot is measured in BENCHMARKS.md.
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn the_deadline_covers_loading_the_module_which_goes_on_for_the_next_attempt() {
    // One function of 30,000 additions: about a second of compilation, more than the call's
    // 150 ms, so the first attempt times out while the module is still compiling.
    let additions = "(local.set 0 (i32.add (local.get 0) (i32.const 7)))\n".repeat(30_000);
    let answering = Fixture::answering(r#"{"status":"ok","output":{"ready":true}}"#);
    let fixture = Fixture {
        items: format!(
            "{} (func $costly (param i32) (result i32) {additions} (local.get 0))",
            answering.items
        ),
        ..answering
    };
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&fixture.bytes());
    let (status, body) = runner
        .post("/v1/invoke", &invoke_request(&module, 150))
        .await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "timeout");
    assert_eq!(body["error"]["details"]["deadlineMs"], 150);
    // A timeout while the module loads used the whole deadline, and says so as every timeout
    // does: its invocation record's duration is the deadline's, not the nothing that ran.
    assert!(
        body["durationMs"].as_f64().is_some_and(|ms| ms >= 150.0),
        "{body}"
    );
    assert_eq!(body["usage"]["httpRequests"], 0, "{body}");
    // The next attempt joins the load that went on (or finds it done): the module was fetched
    // once.
    let (status, body) = runner
        .post("/v1/invoke", &invoke_request(&module, 30_000))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["ready"], true);
    assert_eq!(upstream.module_fetches(), 1);
}

/// A module whose `invoke` answers `{"g":1}` when both `checks` (two i32 conditions on
/// `memory.grow`) hold, and fails otherwise.
fn growing(memory: Option<&str>, checks: &str) -> Fixture {
    Fixture {
        memory: memory.map(str::to_owned),
        invoke: format!(
            "(if (result i32) (i32.and {checks})
               (then (call $answer (i32.const 9216) (i32.const 32)) (i32.const 0))
               (else (i32.const 7)))"
        ),
        items: format!(
            "(data (i32.const 9216) \"{}\")",
            wat_string(r#"{"status":"ok","output":{"g":1}}"#)
        ),
        ..Fixture::default()
    }
}

#[tokio::test]
async fn memory_grow_past_the_cap_answers_minus_one() {
    // memoryMiB 16 = 256 pages; growing by 1000 pages must fail softly, by 10 must work.
    let fixture = growing(
        None,
        "(i32.eq (memory.grow (i32.const 1000)) (i32.const -1))
         (i32.ne (memory.grow (i32.const 10)) (i32.const -1))",
    );
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["g"], 1);
}

#[tokio::test]
async fn without_memory_mib_the_modules_own_maximum_is_the_cap() {
    // The module's memory says at most 2048 pages (128 MiB), as inspection writes it for
    // `memoryMiB: 128`; a request without `memoryMiB` may grow to 1600 pages (100 MiB) but not
    // past the module's maximum.
    let fixture = growing(
        Some("2 2048"),
        "(i32.ne (memory.grow (i32.const 1598)) (i32.const -1))
         (i32.eq (memory.grow (i32.const 449)) (i32.const -1))",
    );
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&fixture.bytes());
    let mut request = invoke_request(&module, 5000);
    request.as_object_mut().expect("object").remove("memoryMiB");
    let (status, body) = runner.post("/v1/invoke", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["g"], 1);
}

#[tokio::test]
async fn deep_recursion_traps() {
    let fixture = Fixture {
        invoke: "(call $down (i32.const 0))".into(),
        items: "(func $down (param i32) (result i32) (call $down (i32.add (local.get 0) (i32.const 1))))".into(),
        ..Fixture::default()
    };
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
}

/// A module whose `invoke` sets an error text naming the secret, then ends with `ending`.
fn failing_with_secret(ending: &str) -> Fixture {
    let message = format!("vendor refused key {SECRET}");
    Fixture {
        imports: r#"(import "extism:host/env" "error_set" (func $error_set (param i64)))"#.into(),
        invoke: format!(
            "(call $error_set (call $to_kernel (i32.const 9216) (i32.const {}))) {ending}",
            message.len()
        ),
        items: format!("(data (i32.const 9216) \"{}\")", wat_string(&message)),
        ..Fixture::default()
    }
}

#[tokio::test]
async fn a_module_error_or_nonzero_return_is_trapped_with_secrets_removed() {
    let fixture = failing_with_secret("(i32.const 1)");
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
    let text = body.to_string();
    assert!(!text.contains(SECRET), "{text}");
    let (status, body) = invoke(&runner, &upstream, &Fixture::invoke("(i32.const 3)")).await;
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], "trapped");
}

#[tokio::test]
async fn a_call_that_fails_still_answers_what_it_used() {
    // Two log lines, then a trap: the 502 carries the usage of the call that ran.
    let fixture = Fixture {
        imports: r#"(import "extism:host/env" "log_info" (func $log_info (param i64)))"#.into(),
        invoke: "(call $log_info (call $to_kernel (i32.const 9216) (i32.const 5))) \
                 (call $log_info (call $to_kernel (i32.const 9216) (i32.const 5))) \
                 unreachable"
            .into(),
        items: r#"(data (i32.const 9216) "hello")"#.into(),
        ..Fixture::default()
    };
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
    assert_eq!(
        body["usage"],
        json!({"httpRequests": 0, "documentReads": 0, "logLines": 2})
    );
    assert!(
        body["durationMs"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{body}"
    );
    // A call refused before it ran (an unknown module) has nothing to report.
    let request = invoke_request(&"0".repeat(64), 1000);
    let (status, body) = runner.post("/v1/invoke", &request).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.get("usage").is_none(), "{body}");
}

#[tokio::test]
async fn bad_answers_are_bad_output() {
    let (upstream, runner) = setup().await;
    let cases = [
        Fixture::answering("not json"),
        Fixture::answering(r#"{"status":"ok"}"#),
        Fixture::answering(r#"{"status":"ok","output":1,"extra":true}"#),
        Fixture::answering(r#"{"status":"ok","output":1} {"status":"ok","output":2}"#),
        Fixture::invoke("(i32.const 0)"), // no output at all
        // 1 MiB + 1 of output.
        Fixture::invoke(
            "(call $output_set (call $alloc (i64.const 1048577)) (i64.const 1048577)) (i32.const 0)",
        ),
    ];
    for fixture in cases {
        let (status, body) = invoke(&runner, &upstream, &fixture).await;
        assert_eq!(status, 502, "{body}");
        assert_eq!(body["error"]["code"], "bad_output", "{body}");
    }
}

#[tokio::test]
async fn an_answer_echoing_a_secret_is_redacted_before_it_is_read() {
    let prefix = r#"{"status":"ok","output":{"echo":""#;
    let suffix = r#""}}"#;
    let fixture = Fixture {
        imports: r#"(import "extism:host/user" "secret_get" (func $secret_get (param i64) (result i64)))"#.into(),
        invoke: format!(
            r#"(local $len i32)
            (local.set $len (call $from_kernel
                (call $secret_get (call $to_kernel (i32.const 9216) (i32.const 7)))
                (i32.const {after_prefix})))
            (memory.copy (i32.add (i32.const {after_prefix}) (local.get $len)) (i32.const 9300) (i32.const {slen}))
            (call $answer (i32.const {p}) (i32.add (i32.const {fixed}) (local.get $len)))
            (i32.const 0)"#,
            p = SCRATCH,
            after_prefix = SCRATCH as usize + prefix.len(),
            slen = suffix.len(),
            fixed = prefix.len() + suffix.len(),
        ),
        items: format!(
            "(data (i32.const 9216) \"API_KEY\") (data (i32.const 9300) \"{}\") (data (i32.const {}) \"{}\")",
            wat_string(suffix),
            SCRATCH,
            wat_string(prefix)
        ),
        ..Fixture::default()
    };
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &fixture).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["echo"], "[redacted]");
    assert!(!body.to_string().contains(SECRET));
}

#[tokio::test]
async fn an_answer_spelling_a_secret_with_json_escapes_is_redacted_too() {
    // The module knows the value and writes it with `\u` escapes: its bytes never show it.
    let escaped: String = SECRET
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let answer = format!(r#"{{"status":"ok","output":{{"echo":"{escaped}"}}}}"#);
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &Fixture::answering(&answer)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["echo"], "[redacted]");
    assert!(!body.to_string().contains(SECRET));
}

/// A module that calls `log` (platform) `n` times with a line mentioning the secret.
fn logging(n: u32) -> Fixture {
    let line = format!("checked with {SECRET}");
    Fixture {
        imports: r#"(import "extism:host/user" "log" (func $log (param i64)))"#.into(),
        invoke: format!(
            r#"(local $i i32)
            (block $done (loop $again
              (br_if $done (i32.ge_u (local.get $i) (i32.const {n})))
              (call $log (call $to_kernel (i32.const 9216) (i32.const {len})))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br $again)))
            (call $answer (i32.const 9500) (i32.const 32)) (i32.const 0)"#,
            len = line.len()
        ),
        items: format!(
            "(data (i32.const 9216) \"{}\") (data (i32.const 9500) \"{}\")",
            wat_string(&line),
            wat_string(r#"{"status":"ok","output":{"g":1}}"#)
        ),
        ..Fixture::default()
    }
}

#[tokio::test]
async fn log_lines_stop_counting_at_two_hundred() {
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &logging(201)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["usage"]["logLines"], 200);
    let (_, body) = invoke(&runner, &upstream, &logging(3)).await;
    assert_eq!(body["usage"]["logLines"], 3);
}

/// A module that sends `n` requests with `http_send` to `url` and answers the last answer as
/// its output.
fn sending(n: u32, url: &str) -> Fixture {
    let request =
        json!({"method": "POST", "url": url, "headers": {"x-test": "1"}, "body": "{}"}).to_string();
    let prefix = r#"{"status":"ok","output":"#;
    Fixture {
        imports:
            r#"(import "extism:host/user" "http_send" (func $http_send (param i64) (result i64)))"#
                .into(),
        invoke: format!(
            r#"(local $i i32) (local $answer i64) (local $len i32)
            (block $done (loop $again
              (br_if $done (i32.ge_u (local.get $i) (i32.const {n})))
              (local.set $answer (call $http_send (call $to_kernel (i32.const 9216) (i32.const {rlen}))))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br $again)))
            (local.set $len (call $from_kernel (local.get $answer) (i32.const {after})))
            (i32.store8 (i32.add (i32.const {after}) (local.get $len)) (i32.const 125))
            (call $answer (i32.const {p}) (i32.add (local.get $len) (i32.const {fixed})))
            (i32.const 0)"#,
            rlen = request.len(),
            p = SCRATCH,
            after = SCRATCH as usize + prefix.len(),
            fixed = prefix.len() + 1,
        ),
        items: format!(
            "(data (i32.const 9216) \"{}\") (data (i32.const {}) \"{}\")",
            wat_string(&request),
            SCRATCH,
            wat_string(prefix)
        ),
        memory: Some("200".into()),
        ..Fixture::default()
    }
}

#[tokio::test]
async fn the_twenty_sixth_request_of_a_call_is_refused() {
    let vendor = Vendor::start(Behaviour::Json(r#"{"score":0.2}"#.into())).await;
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &sending(26, &vendor.url("/score"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["usage"]["httpRequests"], 25);
    assert_eq!(
        body["answer"]["output"]["error"]["code"],
        "too_many_requests"
    );
    assert_eq!(vendor.requests(), 25);
    let (_, body) = invoke(&runner, &upstream, &sending(1, &vendor.url("/score"))).await;
    assert_eq!(body["answer"]["output"]["status"], 200);
    assert_eq!(body["answer"]["output"]["body"], r#"{"score":0.2}"#);
    let seen = vendor.last_request().expect("a request");
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/score")
    );
    assert!(seen.headers.iter().any(|(k, v)| k == "x-test" && v == "1"));
}

#[tokio::test]
async fn a_response_over_eight_mib_is_refused() {
    let limit = 8 * 1024 * 1024;
    let over = Vendor::start(Behaviour::Bytes(limit + 1)).await;
    let (upstream, runner) = setup().await;
    let (status, body) = invoke(&runner, &upstream, &sending(1, &over.url("/big"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["error"]["code"], "too_large");
}

#[tokio::test]
async fn an_unapproved_host_is_refused_without_a_connection() {
    let vendor = Vendor::start(Behaviour::Json("{}".into())).await;
    let (upstream, runner) = setup().await;
    let module = upstream.add_module(&sending(1, &vendor.url("/x")).bytes());
    let mut request = invoke_request(&module, 2000);
    request["hosts"] = json!(["api.vendor.example"]);
    let (status, body) = runner.post("/v1/invoke", &request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["error"]["code"], "not_allowed");
    assert_eq!(vendor.connections(), 0);
}

#[tokio::test]
async fn the_fifth_call_of_a_tenant_and_the_ninth_call_are_busy() {
    let upstream = Upstream::start().await;
    let runner = Runner::start(
        &upstream.url(),
        &[
            ("APP_RUNNER_CONCURRENCY", "8"),
            ("APP_RUNNER_TENANT_CONCURRENCY", "4"),
        ],
    )
    .await;
    let module =
        upstream.add_module(&Fixture::invoke("(loop $spin (br $spin)) (i32.const 0)").bytes());
    // Warm the module cache so that every call below is admitted at once.
    let (status, _) = runner
        .post("/v1/invoke", &invoke_request(&module, 100))
        .await;
    assert_eq!(status, 504);

    let slow = |tenant: String| {
        let mut request = invoke_request(&module, 10_000);
        request["call"]["tenantId"] = json!(tenant);
        request
    };
    let tenant_a = uuid::Uuid::new_v4().to_string();
    let mut held = Vec::new();
    for _ in 0..4 {
        let request = slow(tenant_a.clone());
        let url = runner.url("/v1/invoke");
        held.push(tokio::spawn(async move { post(&url, &request).await }));
    }
    wait_in_flight(&runner, 4.0).await;
    let (status, body) = runner.post("/v1/invoke", &slow(tenant_a.clone())).await;
    assert_eq!(status, 429, "fifth call of one tenant: {body}");
    assert_eq!(body["error"]["code"], "busy");
    for _ in 0..4 {
        let request = slow(uuid::Uuid::new_v4().to_string());
        let url = runner.url("/v1/invoke");
        held.push(tokio::spawn(async move { post(&url, &request).await }));
    }
    wait_in_flight(&runner, 8.0).await;
    let (status, body) = runner
        .post("/v1/invoke", &slow(uuid::Uuid::new_v4().to_string()))
        .await;
    assert_eq!(status, 429, "ninth call: {body}");
    assert_eq!(
        in_flight(&runner).await,
        8.0,
        "refused calls are not in flight"
    );
    for call in held {
        assert_eq!(
            call.await.expect("joined"),
            504,
            "held calls run to their deadline"
        );
    }
    let (status, _) = runner.post("/v1/invoke", &slow(tenant_a)).await;
    assert_eq!(status, 504, "places are released");
    assert_eq!(in_flight(&runner).await, 0.0);
}

#[tokio::test]
async fn calls_that_compute_leave_the_runner_answering_the_others() {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[("APP_RUNNER_CONCURRENCY", "16")]).await;
    let spinning =
        upstream.add_module(&Fixture::invoke("(loop $spin (br $spin)) (i32.const 0)").bytes());
    let quick = upstream.add_module(&Fixture::answering(r#"{"status":"ok","output":{}}"#).bytes());
    let of_tenant = |module: &str, timeout_ms: u64| {
        let mut request = invoke_request(module, timeout_ms);
        request["call"]["tenantId"] = json!(uuid::Uuid::new_v4());
        request
    };
    // Both modules compiled first, so that what follows only runs them.
    assert_eq!(
        runner
            .post("/v1/invoke", &of_tenant(&spinning, 100))
            .await
            .0,
        504
    );
    assert_eq!(
        runner.post("/v1/invoke", &of_tenant(&quick, 5000)).await.0,
        200
    );

    // More calls that never stop computing than the runner has worker threads (one per core).
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<_> = (0..workers * 2)
        .map(|_| {
            let request = of_tenant(&spinning, 5_000);
            let url = runner.url("/v1/invoke");
            tokio::spawn(async move { post(&url, &request).await })
        })
        .collect();
    wait_in_flight(&runner, (workers * 2) as f64).await;
    // Held on the runtime's workers, they would leave the process's sockets a look only every
    // tens of ticks (some 300 ms a request here): forty health checks one after another would
    // then outlast the spinners' five seconds. Each costs the runner next to no CPU, so on the
    // shared cores it waits only for its turn.
    let client = reqwest::Client::new();
    for n in 0..40 {
        let status = client
            .get(runner.url("/health"))
            .send()
            .await
            .expect("answer")
            .status();
        assert_eq!(status, 200, "health check {n}");
    }
    // And other tenants' calls run beside them.
    for n in 0..5 {
        let (status, body) = runner.post("/v1/invoke", &of_tenant(&quick, 5000)).await;
        assert_eq!(status, 200, "quick call {n}: {body}");
    }
    assert!(
        spinners.iter().all(|spinner| !spinner.is_finished()),
        "the health checks and calls were answered while the long calls still computed"
    );
    for spinner in spinners {
        assert_eq!(
            spinner.await.expect("joined"),
            504,
            "a long call ends at its deadline"
        );
    }
}

/// `svc.app.calls.in_flight` as the runner's `/metrics` shows it.
/// Waits until `calls` calls are in flight on `runner` (each holds its place for seconds).
async fn wait_in_flight(runner: &Runner, calls: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while in_flight(runner).await < calls {
        assert!(
            Instant::now() < deadline,
            "{calls} calls never were in flight"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn in_flight(runner: &Runner) -> f64 {
    let text = runner.metrics().await;
    text.lines()
        .find_map(|line| line.strip_prefix("svc_app_calls_in_flight "))
        .unwrap_or_else(|| panic!("no svc_app_calls_in_flight:\n{text}"))
        .trim()
        .parse()
        .expect("a number")
}

async fn post(url: &str, body: &Value) -> u16 {
    reqwest::Client::new()
        .post(url)
        .bearer_auth(crate::support::RUNNER_TOKEN)
        .json(body)
        .send()
        .await
        .expect("answer")
        .status()
        .as_u16()
}

/// A canary secret that the module logs, answers and fails with never reaches the runner's log
/// lines or its answers.
#[tokio::test]
async fn a_secret_never_reaches_the_runner_log() {
    let upstream = Upstream::start().await;
    let log = tempfile::NamedTempFile::new().expect("log file");
    let runner = Runner::start_logging_to(&upstream.url(), log.path()).await;
    let (status, body) = invoke(&runner, &upstream, &logging(3)).await;
    assert_eq!(status, 200, "{body}");
    let failing = failing_with_secret("(unreachable)");
    let (status, body) = invoke(&runner, &upstream, &failing).await;
    assert_eq!(status, 502, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("[redacted]")
    );
    drop(runner); // SIGTERM: the log is flushed
    let text = std::fs::read_to_string(log.path()).expect("log");
    assert!(
        text.contains("checked with [redacted]"),
        "the module's lines were logged: {text}"
    );
    assert!(!text.contains(SECRET), "the secret leaked into the log");
}
