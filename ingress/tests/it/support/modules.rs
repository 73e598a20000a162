//! App modules for the apps routes' tests: WAT compiled at test time, speaking the plugin ABI
//! just enough to answer a manifest and one fixed `invoke` answer.

use serde_json::{Value, json};

/// A manifest named `name` at `version`, with one secret (`API_KEY`), a config schema needing
/// `baseUrl`, and one action `check` taking `{name}`.
pub fn manifest(name: &str, version: &str) -> Value {
    json!({
        "interface": 1,
        "name": name,
        "version": version,
        "description": "A test app.",
        "secrets": [{"name": "API_KEY"}],
        "hosts": ["127.0.0.1"],
        "configSchema": {
            "type": "object",
            "properties": {"baseUrl": {"type": "string", "format": "uri"}},
            "required": ["baseUrl"],
            "additionalProperties": false
        },
        "actions": {
            "check": {
                "input": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"]
                },
                "output": {"type": "object"},
                "timeoutMs": 2000
            }
        },
        "memoryMiB": 16
    })
}

/// A module answering `manifest` and, from `invoke` (and `handle_webhook` when the manifest
/// says it handles webhooks), `answer`.
pub fn module(manifest: &Value, answer: &Value) -> Vec<u8> {
    module_invoking(
        manifest,
        answer,
        "(call $answer (i32.const 32768) (i32.const ANSWER_LEN))",
    )
}

/// A module whose `invoke` traps (the runner's `trapped`, which counts against the circuit).
pub fn trapping(manifest: &Value) -> Vec<u8> {
    module_invoking(manifest, &json!({}), "unreachable")
}

fn module_invoking(manifest: &Value, answer: &Value, invoke: &str) -> Vec<u8> {
    let webhook = if manifest["handles"]["webhook"] == true {
        "(func (export \"handle_webhook\") (result i32) (call $answer (i32.const 32768) (i32.const ANSWER_LEN)) (i32.const 0))"
    } else {
        ""
    };
    let manifest = manifest.to_string();
    let answer = answer.to_string();
    let wat = format!(
        r#"(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "{manifest_text}")
  (data (i32.const 32768) "{answer_text}")
  (func $answer (param $ptr i32) (param $len i32)
    (local $h i64) (local $i i32)
    (local.set $h (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done (loop $copy
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $h) (i64.extend_i32_u (local.get $i)))
                      (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $copy)))
    (call $output_set (local.get $h) (i64.extend_i32_u (local.get $len))))
  (func (export "manifest") (result i32)
    (call $answer (i32.const 1024) (i32.const {manifest_len})) (i32.const 0))
  (func (export "invoke") (result i32)
    {invoke} (i32.const 0))
  {webhook}
)"#,
        webhook = webhook.replace("ANSWER_LEN", &answer.len().to_string()),
        invoke = invoke.replace("ANSWER_LEN", &answer.len().to_string()),
        manifest_text = escape(&manifest),
        manifest_len = manifest.len(),
        answer_text = escape(&answer),
    );
    wat::parse_str(wat).expect("fixture WAT compiles")
}

/// The usual test module: `manifest(name, version)`, answering a score.
pub fn scoring(name: &str, version: &str) -> Vec<u8> {
    module(
        &manifest(name, version),
        &json!({"status": "ok", "output": {"score": 0.25, "hits": [{"list": "PEP"}]}}),
    )
}

fn escape(text: &str) -> String {
    text.bytes().map(|b| format!("\\{b:02x}")).collect()
}
