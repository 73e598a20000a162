//! The Extism kernel (`extism:host/env`) and the WASI sandbox as a module sees them, through the
//! real runner (started through `./stack run runner`) with WAT fixtures: each fixture reports
//! what the kernel answered in its output, and the test compares it with `runner/ABI.md`.

use crate::support::instance::Runner;
use crate::support::upstream::Upstream;
use crate::support::vendor::{Behaviour, Vendor};
use crate::support::wat::{Fixture, Script, put_block, put_number};
use serde_json::{Value, json};

const TENANT: &str = "5b2c0e1a-7d3f-4c8e-9a61-0f2e4d6c8b10";

/// Every kernel function the base fixture does not import already.
const KERNEL: &str = r#"
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "length_unsafe" (func $length_unsafe (param i64) (result i64)))
  (import "extism:host/env" "load_u64" (func $load_u64 (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "input_offset" (func $input_offset (result i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "error_get" (func $error_get (result i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (import "extism:host/env" "http_status_code" (func $http_status_code (result i32)))
  (import "extism:host/env" "http_headers" (func $http_headers (result i64)))
  (import "extism:host/env" "log_trace" (func $log_trace (param i64)))
  (import "extism:host/env" "log_debug" (func $log_debug (param i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "log_warn" (func $log_warn (param i64)))
  (import "extism:host/env" "log_error" (func $log_error (param i64)))
  (import "extism:host/env" "get_log_level" (func $get_log_level (result i32)))
"#;

const OK_OPEN: &str = r#"{"status":"ok","output":{"#;
const OK_CLOSE: &str = "}}";

fn invoke_request(module: &str, config: Value, hosts: Value) -> Value {
    json!({
        "module": module,
        "app": {"name": "fixture"},
        "call": {"id": format!("call-{}", uuid::Uuid::new_v4()), "tenantId": TENANT},
        "action": "run",
        "config": config,
        "input": {"name": "Ada"},
        "secrets": {},
        "hosts": hosts,
        "timeoutMs": 5000,
        "memoryMiB": 16
    })
}

async fn setup() -> (Upstream, Runner) {
    let upstream = Upstream::start().await;
    let runner = Runner::start(&upstream.url(), &[]).await;
    (upstream, runner)
}

/// Publishes `fixture` and invokes it with `config` and the approved `hosts`.
async fn call_with(
    runner: &Runner,
    upstream: &Upstream,
    fixture: &Fixture,
    config: Value,
    hosts: Value,
) -> (u16, Value) {
    let module = upstream.add_module(&fixture.bytes());
    runner
        .post("/v1/invoke", &invoke_request(&module, config, hosts))
        .await
}

async fn call(runner: &Runner, upstream: &Upstream, fixture: &Fixture) -> (u16, Value) {
    call_with(runner, upstream, fixture, json!({}), json!(["127.0.0.1"])).await
}

/// The output of a call that must answer `ok`.
async fn output(runner: &Runner, upstream: &Upstream, fixture: &Fixture) -> Value {
    let (status, body) = call(runner, upstream, fixture).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["status"], "ok", "{body}");
    body["answer"]["output"].clone()
}

#[tokio::test]
async fn config_get_answers_strings_as_text_other_values_as_json_and_nothing_as_zero() {
    let mut s = Script::new();
    let body = [
        "(local $key i64) (local $freed i64)".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""text":""#),
        put_block(&format!("(call $config_get {})", s.block("text"))),
        s.put(r#"","number":"#),
        put_block(&format!("(call $config_get {})", s.block("number"))),
        s.put(r#","object":"#),
        put_block(&format!("(call $config_get {})", s.block("object"))),
        s.put(r#","flag":"#),
        put_block(&format!("(call $config_get {})", s.block("flag"))),
        s.put(r#","absent":"#),
        put_number(&format!("(call $config_get {})", s.block("absent"))),
        s.put(r#","null":"#),
        put_number(&format!("(call $config_get {})", s.block("nothing"))),
        // config_get frees its key (an absent one, so that no answer reuses the block).
        format!(
            "(local.set $key {}) (drop (call $config_get (local.get $key))) \
             (local.set $freed (call $length (local.get $key)))",
            s.block("absent")
        ),
        s.put(r#","keyLengthAfter":"#),
        put_number("(local.get $freed)"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let fixture = s.invoke(KERNEL, &body);
    let (upstream, runner) = setup().await;
    let config = json!({
        "text": "hello",
        "number": 42,
        "object": {"a": [1, 2]},
        "flag": true,
        "nothing": null
    });
    let (status, body) =
        call_with(&runner, &upstream, &fixture, config, json!(["127.0.0.1"])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"]["output"],
        json!({
            "text": "hello",
            "number": 42,
            "object": {"a": [1, 2]},
            "flag": true,
            "absent": 0,
            "null": 0,
            "keyLengthAfter": 0
        })
    );
}

/// A module that reads variable `a`, sets it twice, deletes it with a null value, and reports
/// each step.
fn variables() -> Fixture {
    let mut s = Script::new();
    let body = [
        s.put(OK_OPEN),
        s.put(r#""before":"#),
        put_number(&format!("(call $var_get {})", s.block("a"))),
        format!("(call $var_set {} {})", s.block("a"), s.block("one")),
        s.put(r#","first":""#),
        put_block(&format!("(call $var_get {})", s.block("a"))),
        format!("(call $var_set {} {})", s.block("a"), s.block("two")),
        s.put(r#"","second":""#),
        put_block(&format!("(call $var_get {})", s.block("a"))),
        format!("(call $var_set {} (i64.const 0))", s.block("a")),
        s.put(r#"","deleted":"#),
        put_number(&format!("(call $var_get {})", s.block("a"))),
        s.put(r#","other":"#),
        put_number(&format!("(call $var_get {})", s.block("b"))),
        s.put(OK_CLOSE),
    ]
    .concat();
    s.invoke(KERNEL, &body)
}

#[tokio::test]
async fn variables_round_trip_a_null_value_deletes_and_nothing_survives_the_call() {
    let (upstream, runner) = setup().await;
    let expected = json!({"before": 0, "first": "one", "second": "two", "deleted": 0, "other": 0});
    assert_eq!(output(&runner, &upstream, &variables()).await, expected);
    // A second call of the same (now cached) module starts without the variable again.
    assert_eq!(output(&runner, &upstream, &variables()).await, expected);
    assert_eq!(upstream.module_fetches(), 1);
}

#[tokio::test]
async fn words_round_trip_unaligned_and_access_outside_the_memory_is_harmless() {
    let mut s = Script::new();
    let body = [
        "(local $h i64) (local $last i64)".to_owned(),
        "(local.set $h (call $alloc (i64.const 16)))".to_owned(),
        "(call $store_u64 (i64.add (local.get $h) (i64.const 3)) (i64.const 0x0102030405060708))"
            .to_owned(),
        // Outside the memory: ignored, never a trap.
        "(call $store_u8 (i64.const 0x10000000000) (i32.const 7))".to_owned(),
        "(call $store_u8 (i64.const -1) (i32.const 7))".to_owned(),
        "(call $store_u64 (i64.const 0x10000000000) (i64.const -1))".to_owned(),
        // A word that would cross the end of the memory is ignored too.
        "(local.set $last (call $alloc (i64.const 4)))".to_owned(),
        "(call $store_u64 (local.get $last) (i64.const -1))".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""word":"#),
        put_number("(call $load_u64 (i64.add (local.get $h) (i64.const 3)))"),
        s.put(r#","lowByte":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (i64.add (local.get $h) (i64.const 3))))"),
        s.put(r#","highByte":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (i64.add (local.get $h) (i64.const 10))))"),
        s.put(r#","far":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (i64.const 0x10000000000)))"),
        s.put(r#","null":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (i64.const 0)))"),
        s.put(r#","farWord":"#),
        put_number("(call $load_u64 (i64.const 0x10000000000))"),
        s.put(r#","crossing":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (local.get $last)))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(
        out,
        json!({
            "word": 0x0102_0304_0506_0708_i64,
            "lowByte": 8,
            "highByte": 1,
            "far": 0,
            "null": 0,
            "farWord": 0,
            "crossing": 0
        })
    );
}

#[tokio::test]
async fn lengths_are_for_block_starts_only_and_free_is_idempotent() {
    let mut s = Script::new();
    let body = [
        "(local $h i64) (local $g i64)".to_owned(),
        "(local.set $h (call $alloc (i64.const 10)))".to_owned(),
        "(local.set $g (call $alloc (i64.const 5)))".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""length":"#),
        put_number("(call $length (local.get $h))"),
        s.put(r#","lengthUnsafe":"#),
        put_number("(call $length_unsafe (local.get $h))"),
        s.put(r#","interior":"#),
        put_number("(call $length (i64.add (local.get $h) (i64.const 1)))"),
        s.put(r#","bogus":"#),
        put_number("(call $length (i64.const 0x7fffffff))"),
        s.put(r#","zero":"#),
        put_number("(call $alloc (i64.const 0))"),
        "(call $free (local.get $h)) (call $free (local.get $h))".to_owned(),
        "(call $free (i64.const 0)) (call $free (i64.const 123456789))".to_owned(),
        "(call $free (i64.add (local.get $g) (i64.const 2)))".to_owned(),
        s.put(r#","freed":"#),
        put_number("(call $length (local.get $h))"),
        s.put(r#","neighbour":"#),
        put_number("(call $length (local.get $g))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(
        out,
        json!({
            "length": 10,
            "lengthUnsafe": 10,
            "interior": 0,
            "bogus": 0,
            "zero": 0,
            "freed": 0,
            "neighbour": 5
        })
    );
}

#[tokio::test]
async fn the_input_block_is_where_input_offset_says_and_as_long_as_input_length() {
    // What the C PDK does: `length_unsafe(input_offset())` for the size, then loads from there.
    let mut s = Script::new();
    let body = [
        s.put(OK_OPEN),
        s.put(r#""inputLength":"#),
        put_number("(call $input_length)"),
        s.put(r#","blockLength":"#),
        put_number("(call $length_unsafe (call $input_offset))"),
        s.put(r#","length":"#),
        put_number("(call $length (call $input_offset))"),
        s.put(r#","firstByte":"#),
        put_number("(i64.extend_i32_u (call $load_u8 (call $input_offset)))"),
        s.put(r#","firstByteByIndex":"#),
        put_number("(i64.extend_i32_u (call $input_load_u8 (i64.const 0)))"),
        s.put(r#","pastTheEnd":"#),
        put_number("(i64.extend_i32_u (call $input_load_u8 (call $input_length)))"),
        s.put(r#","input":"#),
        put_block("(call $input_offset)"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    let length = out["inputLength"].as_u64().expect("a number");
    assert!(length > 2, "{out}");
    assert_eq!(out["blockLength"], length);
    assert_eq!(out["length"], length);
    assert_eq!(out["firstByte"], u64::from(b'{'));
    assert_eq!(out["firstByteByIndex"], u64::from(b'{'));
    assert_eq!(out["pastTheEnd"], 0);
    // The block holds the whole input document.
    assert_eq!(out["input"]["input"], json!({"name": "Ada"}));
    assert_eq!(out["input"]["action"], "run");
}

#[tokio::test]
async fn an_empty_or_cleared_error_with_return_zero_is_success() {
    let (upstream, runner) = setup().await;
    // error_set(alloc(0)): the null handle, i.e. no error.
    let mut s = Script::new();
    let body = [
        "(call $error_set (call $alloc (i64.const 0)))".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""error":"#),
        put_number("(call $error_get)"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let out = output(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(out, json!({"error": 0}));

    // An error set and then cleared with 0.
    let mut s = Script::new();
    let body = [
        format!("(call $error_set {})", s.block("boom")),
        "(call $error_set (i64.const 0))".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""cleared":true"#),
        s.put(OK_CLOSE),
    ]
    .concat();
    let out = output(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(out, json!({"cleared": true}));

    // The same error left in place fails the call with its text.
    let mut s = Script::new();
    let body = [
        format!("(call $error_set {})", s.block("boom")),
        s.put(OK_OPEN),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (status, body) = call(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("boom")),
        "{body}"
    );
}

/// A module that sends one kernel `http_request` (POST `url`, body `{"q":1}`) and reports the
/// status and headers before and after, and the response body.
fn kernel_request(url: &str) -> Fixture {
    let request =
        json!({"url": url, "method": "post", "headers": {"x-test": "kernel"}}).to_string();
    let mut s = Script::new();
    let body = [
        "(local $response i64)".to_owned(),
        s.put(OK_OPEN),
        s.put(r#""statusBefore":"#),
        put_number("(i64.extend_i32_s (call $http_status_code))"),
        s.put(r#","headersBefore":"#),
        put_number("(call $http_headers)"),
        format!(
            "(local.set $response (call $http_request {} {}))",
            s.block(&request),
            s.block(r#"{"q":1}"#)
        ),
        s.put(r#","status":"#),
        put_number("(i64.extend_i32_s (call $http_status_code))"),
        s.put(r#","headers":"#),
        put_block("(call $http_headers)"),
        s.put(r#","body":"#),
        put_block("(local.get $response)"),
        s.put(OK_CLOSE),
    ]
    .concat();
    s.invoke(KERNEL, &body)
}

#[tokio::test]
async fn kernel_http_request_to_an_approved_host_answers_body_status_and_headers() {
    let vendor = Vendor::start(Behaviour::Json(r#"{"score":0.7}"#.into())).await;
    let (upstream, runner) = setup().await;
    let (status, body) = call(&runner, &upstream, &kernel_request(&vendor.url("/score"))).await;
    assert_eq!(status, 200, "{body}");
    let out = &body["answer"]["output"];
    assert_eq!(out["statusBefore"], 0, "{out}");
    assert_eq!(out["headersBefore"], 0, "{out}");
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["body"], json!({"score": 0.7}));
    let headers = out["headers"].as_object().expect("a JSON object");
    assert_eq!(headers["content-type"], "application/json");
    assert!(
        headers.keys().all(|k| *k == k.to_lowercase()),
        "lower-case names: {headers:?}"
    );
    assert_eq!(body["usage"]["httpRequests"], 1);
    let seen = vendor.last_request().expect("the vendor was called");
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/score")
    );
    assert!(
        seen.headers
            .iter()
            .any(|(k, v)| k == "x-test" && v == "kernel")
    );
    assert_eq!(seen.body, br#"{"q":1}"#);

    // A non-2xx status is an answer, not a trap.
    let vendor = Vendor::start(Behaviour::ByPath(vec![("/score".into(), "{}".into())])).await;
    let (status, body) = call(&runner, &upstream, &kernel_request(&vendor.url("/gone"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"]["status"], 404);
    assert_eq!(body["answer"]["output"]["body"], json!({}));
}

#[tokio::test]
async fn kernel_http_request_to_an_unapproved_host_traps_without_a_connection() {
    let vendor = Vendor::start(Behaviour::Json("{}".into())).await;
    let (upstream, runner) = setup().await;
    let (status, body) = call_with(
        &runner,
        &upstream,
        &kernel_request(&vendor.url("/score")),
        json!({}),
        json!(["api.vendor.example"]),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
    assert_eq!(vendor.connections(), 0);
    assert_eq!(vendor.requests(), 0);
}

#[tokio::test]
async fn the_log_level_is_info_and_lines_below_it_are_not_counted() {
    let mut s = Script::new();
    let body = [
        format!("(call $log_info {})", s.block("an info line")),
        format!("(call $log_debug {})", s.block("a debug line")),
        format!("(call $log_debug {})", s.block("another debug line")),
        format!("(call $log_trace {})", s.block("a trace line")),
        s.put(OK_OPEN),
        s.put(r#""level":"#),
        put_number("(i64.extend_i32_s (call $get_log_level))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (upstream, runner) = setup().await;
    let (status, body) = call(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answer"]["output"], json!({"level": 2}));
    assert_eq!(body["usage"]["logLines"], 1);

    // warn and error count like info.
    let mut s = Script::new();
    let body = [
        format!("(call $log_warn {})", s.block("a warning")),
        format!("(call $log_error {})", s.block("an error")),
        format!("(call $log_debug {})", s.block("a debug line")),
        s.put(OK_OPEN),
        s.put(OK_CLOSE),
    ]
    .concat();
    let (status, body) = call(&runner, &upstream, &s.invoke(KERNEL, &body)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["usage"]["logLines"], 2);
}

#[tokio::test]
async fn initialize_runs_before_the_export_and_start_never_runs() {
    let mut s = Script::new();
    let body = [
        s.put(OK_OPEN),
        s.put(r#""initialised":"#),
        put_number("(i64.extend_i32_s (global.get $initialised))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let mut fixture = s.invoke(KERNEL, &body);
    fixture.items.push_str(
        r#"
  (global $initialised (mut i32) (i32.const 0))
  (func (export "_initialize") (global.set $initialised (i32.const 41)))
  (func (export "_start") unreachable)"#,
    );
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &fixture).await;
    assert_eq!(out, json!({"initialised": 41}));
}

const FD_WRITE: &str = r#"
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))"#;

#[tokio::test]
async fn standard_output_becomes_log_lines() {
    let mut s = Script::new();
    let (hello, hello_len) = s.place("hello\n");
    let (other, other_len) = s.place("not a log line\n");
    // iovec at 12000 (ptr, len), bytes written at 12016.
    let write = |fd: u32, ptr: u32, len: usize| {
        format!(
            "(i32.store (i32.const 12000) (i32.const {ptr})) \
             (i32.store (i32.const 12004) (i32.const {len})) \
             (i64.extend_i32_u (call $fd_write (i32.const {fd}) (i32.const 12000) (i32.const 1) (i32.const 12016)))"
        )
    };
    let body = [
        s.put(OK_OPEN),
        s.put(r#""errno":"#),
        put_number(&write(1, hello, hello_len)),
        s.put(r#","written":"#),
        put_number("(i64.load32_u (i32.const 12016))"),
        s.put(r#","otherFd":"#),
        put_number(&write(5, other, other_len)),
        s.put(OK_CLOSE),
    ]
    .concat();
    let imports = format!("{KERNEL}{FD_WRITE}");
    let (upstream, runner) = setup().await;
    let (status, body) = call(&runner, &upstream, &s.invoke(&imports, &body)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"]["output"],
        json!({"errno": 0, "written": 6, "otherFd": 8})
    );
    assert_eq!(body["usage"]["logLines"], 1);
}

#[tokio::test]
async fn an_fd_write_of_a_million_iovecs_over_one_region_is_accepted_without_copying_it_all() {
    // 1,000,000 iovecs at 1 MiB.. (above the fixtures' scratch space), each naming the same
    // 64 KiB at 0: 64 GiB if the host copied them. The module grows its memory to hold the
    // array, fills it, and writes once.
    let mut s = Script::new();
    let body = [
        "(local $i i32)".to_owned(),
        "(drop (memory.grow (i32.const 150)))".to_owned(),
        "(block $done (loop $fill \
           (br_if $done (i32.ge_u (local.get $i) (i32.const 1000000))) \
           (i32.store (i32.add (i32.const 1048576) (i32.mul (local.get $i) (i32.const 8))) (i32.const 0)) \
           (i32.store (i32.add (i32.const 1048580) (i32.mul (local.get $i) (i32.const 8))) (i32.const 65536)) \
           (local.set $i (i32.add (local.get $i) (i32.const 1))) \
           (br $fill)))"
            .to_owned(),
        s.put(OK_OPEN),
        s.put(r#""errno":"#),
        put_number(
            "(i64.extend_i32_u (call $fd_write (i32.const 1) (i32.const 1048576) \
             (i32.const 1000000) (i32.const 12016)))",
        ),
        s.put(r#","written":"#),
        put_number("(i64.load32_u (i32.const 12016))"),
        s.put(r#","past":"#),
        // An iovec array that runs off the end of memory faults.
        put_number(
            "(i64.extend_i32_u (call $fd_write (i32.const 1) (i32.const -16) \
             (i32.const 4) (i32.const 12016)))",
        ),
        s.put(OK_CLOSE),
    ]
    .concat();
    let imports = format!("{KERNEL}{FD_WRITE}");
    let (upstream, runner) = setup().await;
    let (status, body) = call(&runner, &upstream, &s.invoke(&imports, &body)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["answer"]["output"],
        json!({"errno": 0, "written": u32::MAX, "past": 21}),
        "{body}"
    );
}

const PROC_EXIT: &str =
    r#"(import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))"#;

#[tokio::test]
async fn proc_exit_zero_keeps_the_output_and_any_other_status_is_trapped() {
    let (upstream, runner) = setup().await;
    let exiting = |code: i32| {
        let mut s = Script::new();
        let body = [
            s.put(OK_OPEN),
            s.put(r#""exited":true"#),
            s.put(OK_CLOSE),
            // Set the output, then exit before `invoke` returns.
            format!("(call $finish) (call $proc_exit (i32.const {code})) unreachable"),
        ]
        .concat();
        s.invoke(&format!("{KERNEL}{PROC_EXIT}"), &body)
    };
    let out = output(&runner, &upstream, &exiting(0)).await;
    assert_eq!(out, json!({"exited": true}));
    let (status, body) = call(&runner, &upstream, &exiting(3)).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "trapped");
}

#[tokio::test]
async fn an_unimplemented_wasi_function_answers_enosys() {
    let mut s = Script::new();
    let body = [
        s.put(OK_OPEN),
        s.put(r#""fdReaddir":"#),
        put_number(
            "(i64.extend_i32_u (call $fd_readdir (i32.const 3) (i32.const 12000) (i32.const 64) \
             (i64.const 0) (i32.const 12100)))",
        ),
        s.put(r#","fdRead":"#),
        put_number(
            "(i64.extend_i32_u (call $fd_read (i32.const 0) (i32.const 12000) (i32.const 1) \
             (i32.const 12100)))",
        ),
        s.put(OK_CLOSE),
    ]
    .concat();
    let imports = format!(
        r#"{KERNEL}
  (import "wasi_snapshot_preview1" "fd_readdir" (func $fd_readdir (param i32 i32 i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))"#
    );
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &s.invoke(&imports, &body)).await;
    assert_eq!(out, json!({"fdReaddir": 52, "fdRead": 52}));
}

#[tokio::test]
async fn random_get_fills_the_buffer() {
    // 32 zero bytes at 12000 (fresh memory), filled by random_get; the module counts the bytes
    // that are no longer zero and reports the first word.
    let mut s = Script::new();
    let body = [
        "(local $errno i32) (local $i i32) (local $nonzero i32)".to_owned(),
        "(local.set $errno (call $random_get (i32.const 12000) (i32.const 32)))".to_owned(),
        "(block $done (loop $count \
           (br_if $done (i32.ge_u (local.get $i) (i32.const 32))) \
           (if (i32.load8_u (i32.add (i32.const 12000) (local.get $i))) \
             (then (local.set $nonzero (i32.add (local.get $nonzero) (i32.const 1))))) \
           (local.set $i (i32.add (local.get $i) (i32.const 1))) \
           (br $count)))"
            .to_owned(),
        s.put(OK_OPEN),
        s.put(r#""errno":"#),
        put_number("(i64.extend_i32_u (local.get $errno))"),
        s.put(r#","nonzero":"#),
        put_number("(i64.extend_i32_u (local.get $nonzero))"),
        s.put(r#","word":"#),
        put_number("(i64.load (i32.const 12000))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let imports = format!(
        r#"{KERNEL}
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))"#
    );
    let fixture = s.invoke(&imports, &body);
    let (upstream, runner) = setup().await;
    let first = output(&runner, &upstream, &fixture).await;
    let second = output(&runner, &upstream, &fixture).await;
    for out in [&first, &second] {
        assert_eq!(out["errno"], 0, "{out}");
        // 32 random bytes: the chance of more than 16 zeros is nil.
        assert!(out["nonzero"].as_u64().is_some_and(|n| n >= 16), "{out}");
    }
    assert_ne!(first["word"], second["word"], "each call gets fresh bytes");
}

#[tokio::test]
async fn random_get_outside_memory_faults_without_filling_anything() {
    let mut s = Script::new();
    let body = [
        s.put(OK_OPEN),
        s.put(r#""huge":"#),
        put_number("(i64.extend_i32_u (call $random_get (i32.const 0) (i32.const 2147483647)))"),
        s.put(r#","wrapping":"#),
        put_number("(i64.extend_i32_u (call $random_get (i32.const -8) (i32.const 16)))"),
        s.put(OK_CLOSE),
    ]
    .concat();
    let imports = format!(
        r#"{KERNEL}
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))"#
    );
    let (upstream, runner) = setup().await;
    let out = output(&runner, &upstream, &s.invoke(&imports, &body)).await;
    assert_eq!(out, json!({"huge": 21, "wrapping": 21}));
}
