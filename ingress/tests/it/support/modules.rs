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
        answer,
    )
}

/// A module answering `invoke` with `answer`, and `handle_webhook` (and `handoff`, when the
/// manifest names a hand-off SDK) with `webhook`.
pub fn with_webhook(manifest: &Value, answer: &Value, webhook: &Value) -> Vec<u8> {
    module_invoking(
        manifest,
        answer,
        "(call $answer (i32.const 32768) (i32.const ANSWER_LEN))",
        webhook,
    )
}

/// A module whose `invoke` traps (the runner's `trapped`, which counts against the circuit).
pub fn trapping(manifest: &Value) -> Vec<u8> {
    module_invoking(manifest, &json!({}), "unreachable", &json!({}))
}

fn module_invoking(manifest: &Value, answer: &Value, invoke: &str, webhook: &Value) -> Vec<u8> {
    let handle_webhook = if manifest["handles"]["webhook"] == true {
        "(func (export \"handle_webhook\") (result i32) (call $answer (i32.const 65536) (i32.const WEBHOOK_LEN)) (i32.const 0))"
    } else {
        ""
    };
    let handoff = if manifest["handles"]["handoff"].is_string() {
        "(func (export \"handoff\") (result i32) (call $answer (i32.const 65536) (i32.const WEBHOOK_LEN)) (i32.const 0))"
    } else {
        ""
    };
    let manifest = manifest.to_string();
    let answer = answer.to_string();
    let webhook = webhook.to_string();
    let wat = format!(
        r#"(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 3)
  (data (i32.const 1024) "{manifest_text}")
  (data (i32.const 32768) "{answer_text}")
  (data (i32.const 65536) "{webhook_text}")
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
  {handle_webhook}
  {handoff}
)"#,
        handle_webhook = handle_webhook.replace("WEBHOOK_LEN", &webhook.len().to_string()),
        handoff = handoff.replace("WEBHOOK_LEN", &webhook.len().to_string()),
        invoke = invoke.replace("ANSWER_LEN", &answer.len().to_string()),
        manifest_text = escape(&manifest),
        manifest_len = manifest.len(),
        answer_text = escape(&answer),
        webhook_text = escape(&webhook),
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

/// A manifest named `name` at `version` that declares `needs: ["documents"]`, with one action
/// `check` taking and answering any object; no secrets, no hosts.
pub fn documents_manifest(name: &str, version: &str) -> Value {
    json!({
        "interface": 1,
        "name": name,
        "version": version,
        "description": "A test app that reads the call's documents.",
        "needs": ["documents"],
        "actions": {
            "check": {
                "input": {"type": "object"},
                "output": {"type": "object"},
                "timeoutMs": 5000
            }
        },
        "memoryMiB": 16
    })
}

/// Where [`document_reader`] keeps its texts in its memory.
const ID_KEY_AT: usize = 60000;
const HEAD_AT: usize = 60016;
const READ_KEY_AT: usize = 60080;
const NULL_AT: usize = 60096;
const TAIL_AT: usize = 60112;

/// A module whose `invoke` calls `document_list`, then `document_read` of the first id in the
/// list (the first `"id":"` of its answer), and answers
/// `{"status": "ok", "output": {"list": <the list answer>, "read": <the read answer or null>}}`.
pub fn document_reader(manifest: &Value) -> Vec<u8> {
    let manifest = manifest.to_string();
    let (id_key, head, read_key, null, tail) = (
        "\"id\":\"",
        "{\"status\":\"ok\",\"output\":{\"list\":",
        ",\"read\":",
        "null",
        "}}",
    );
    let wat = format!(
        r#"(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/user" "document_list" (func $document_list (param i64) (result i64)))
  (import "extism:host/user" "document_read" (func $document_read (param i64) (result i64)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "{manifest_text}")
  (data (i32.const {ID_KEY_AT}) "{id_key_text}")
  (data (i32.const {HEAD_AT}) "{head_text}")
  (data (i32.const {READ_KEY_AT}) "{read_key_text}")
  (data (i32.const {NULL_AT}) "{null_text}")
  (data (i32.const {TAIL_AT}) "{tail_text}")
  ;; Copies $len bytes of this module's memory at $ptr to handle memory at $dst.
  (func $from_memory (param $dst i64) (param $ptr i32) (param $len i32)
    (local $i i32)
    (block $done (loop $copy
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $dst) (i64.extend_i32_u (local.get $i)))
                      (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $copy))))
  ;; Copies $len bytes of handle memory from $src to $dst.
  (func $from_handle (param $dst i64) (param $src i64) (param $len i64)
    (local $i i64)
    (block $done (loop $copy
      (br_if $done (i64.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $dst) (local.get $i))
                      (call $load_u8 (i64.add (local.get $src) (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $copy))))
  ;; Where the 36 characters of the first id in the answer at $h start, or -1.
  (func $first_id (param $h i64) (param $len i64) (result i64)
    (local $i i64) (local $k i32) (local $same i32)
    (block $none (loop $scan
      (br_if $none (i64.gt_u (i64.add (local.get $i) (i64.const {id_end})) (local.get $len)))
      (local.set $k (i32.const 0))
      (local.set $same (i32.const 1))
      (block $differ (loop $compare
        (br_if $differ (i32.ge_u (local.get $k) (i32.const {id_key_len})))
        (if (i32.ne
              (call $load_u8 (i64.add (i64.add (local.get $h) (local.get $i))
                                      (i64.extend_i32_u (local.get $k))))
              (i32.load8_u (i32.add (i32.const {ID_KEY_AT}) (local.get $k))))
          (then (local.set $same (i32.const 0)) (br $differ)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $compare)))
      (if (local.get $same) (then (return (i64.add (local.get $i) (i64.const {id_key_len})))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $scan)))
    (i64.const -1))
  (func (export "manifest") (result i32)
    (local $h i64)
    (local.set $h (call $alloc (i64.const {manifest_len})))
    (call $from_memory (local.get $h) (i32.const 1024) (i32.const {manifest_len}))
    (call $output_set (local.get $h) (i64.const {manifest_len}))
    (i32.const 0))
  (func (export "invoke") (result i32)
    (local $list i64) (local $list_len i64) (local $at i64) (local $id i64)
    (local $read i64) (local $read_len i64) (local $out i64) (local $out_len i64)
    (local $pos i64)
    (local.set $list (call $document_list (i64.const 0)))
    (local.set $list_len (call $length (local.get $list)))
    (local.set $at (call $first_id (local.get $list) (local.get $list_len)))
    (if (i64.ge_s (local.get $at) (i64.const 0))
      (then
        (local.set $id (call $alloc (i64.const 36)))
        (call $from_handle (local.get $id) (i64.add (local.get $list) (local.get $at))
                           (i64.const 36))
        (local.set $read (call $document_read (local.get $id)))
        (local.set $read_len (call $length (local.get $read)))))
    (local.set $out_len
      (i64.add (i64.add (i64.const {fixed_len}) (local.get $list_len))
               (select (local.get $read_len) (i64.const {null_len})
                       (i64.ne (local.get $read) (i64.const 0)))))
    (local.set $out (call $alloc (local.get $out_len)))
    (local.set $pos (local.get $out))
    (call $from_memory (local.get $pos) (i32.const {HEAD_AT}) (i32.const {head_len}))
    (local.set $pos (i64.add (local.get $pos) (i64.const {head_len})))
    (call $from_handle (local.get $pos) (local.get $list) (local.get $list_len))
    (local.set $pos (i64.add (local.get $pos) (local.get $list_len)))
    (call $from_memory (local.get $pos) (i32.const {READ_KEY_AT}) (i32.const {read_key_len}))
    (local.set $pos (i64.add (local.get $pos) (i64.const {read_key_len})))
    (if (i64.ne (local.get $read) (i64.const 0))
      (then
        (call $from_handle (local.get $pos) (local.get $read) (local.get $read_len))
        (local.set $pos (i64.add (local.get $pos) (local.get $read_len))))
      (else
        (call $from_memory (local.get $pos) (i32.const {NULL_AT}) (i32.const {null_len}))
        (local.set $pos (i64.add (local.get $pos) (i64.const {null_len})))))
    (call $from_memory (local.get $pos) (i32.const {TAIL_AT}) (i32.const {tail_len}))
    (call $output_set (local.get $out) (local.get $out_len))
    (i32.const 0))
)"#,
        manifest_text = escape(&manifest),
        manifest_len = manifest.len(),
        id_key_text = escape(id_key),
        id_key_len = id_key.len(),
        id_end = id_key.len() + 36,
        head_text = escape(head),
        head_len = head.len(),
        read_key_text = escape(read_key),
        read_key_len = read_key.len(),
        null_text = escape(null),
        null_len = null.len(),
        tail_text = escape(tail),
        tail_len = tail.len(),
        fixed_len = head.len() + read_key.len() + tail.len(),
    );
    wat::parse_str(wat).expect("fixture WAT compiles")
}
