//! WAT fixtures: a module skeleton that speaks the Extism kernel ABI, with helpers to move
//! bytes between the module's memory and kernel handles, and a valid manifest. Each fixture
//! fills in the body of `invoke` (and, when it needs them, extra imports and functions).

/// A manifest every fixture answers unless it brings its own (16 MiB cap).
pub const MANIFEST: &str = r#"{"interface":1,"name":"fixture","version":"1.0.0","actions":{"run":{"input":{"type":"object"},"output":{"type":"object"}}},"hosts":["127.0.0.1","localhost"],"memoryMiB":16,"secrets":[{"name":"API_KEY"}]}"#;

/// Where the manifest sits in the module's memory; other static strings go after it.
const MANIFEST_AT: u32 = 1024;
/// Scratch space fixtures may use for data copied out of kernel handles.
pub const SCRATCH: u32 = 65536;

#[derive(Debug, Default)]
pub struct Fixture {
    /// Extra `(import ...)` lines.
    pub imports: String,
    /// Extra top-level items (functions, data, globals).
    pub items: String,
    /// The body of `invoke`, which must leave an i32 on the stack.
    pub invoke: String,
    /// The manifest JSON (default [`MANIFEST`]).
    pub manifest: Option<String>,
    /// `(memory ...)` limits in pages (default `2`, no maximum).
    pub memory: Option<String>,
    /// Skip the `invoke` export (for missing-export tests).
    pub no_invoke: bool,
}

/// Escapes `text` for a WAT string literal.
pub fn wat_string(text: &str) -> String {
    text.bytes().map(|b| format!("\\{b:02x}")).collect()
}

impl Fixture {
    pub fn invoke(body: &str) -> Self {
        Self {
            invoke: body.to_owned(),
            ..Self::default()
        }
    }

    /// A module whose `invoke` answers `answer` (JSON text placed in a data segment).
    pub fn answering(answer: &str) -> Self {
        let mut fixture = Self::invoke(&format!(
            "(call $answer (i32.const {at}) (i32.const {len})) (i32.const 0)",
            at = MANIFEST_AT + 8192,
            len = answer.len()
        ));
        fixture.items = format!(
            "(data (i32.const {at}) \"{text}\")",
            at = MANIFEST_AT + 8192,
            text = wat_string(answer)
        );
        fixture
    }

    pub fn wat(&self) -> String {
        let manifest = self.manifest.as_deref().unwrap_or(MANIFEST);
        let memory = self.memory.as_deref().unwrap_or("2");
        let invoke = if self.no_invoke {
            String::new()
        } else {
            format!("(func (export \"invoke\") (result i32) {})", self.invoke)
        };
        format!(
            r#"(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  {imports}
  (memory (export "memory") {memory})
  (data (i32.const {manifest_at}) "{manifest_text}")
  ;; Copies [ptr, ptr+len) of this memory into a new kernel block; answers its handle.
  (func $to_kernel (param $ptr i32) (param $len i32) (result i64)
    (local $h i64) (local $i i32)
    (local.set $h (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done (loop $copy
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $h) (i64.extend_i32_u (local.get $i)))
                      (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $copy)))
    (local.get $h))
  ;; Copies kernel block $h into this memory at $dst; answers its length.
  (func $from_kernel (param $h i64) (param $dst i32) (result i32)
    (local $len i32) (local $i i32)
    (local.set $len (i32.wrap_i64 (call $length (local.get $h))))
    (block $done (loop $copy
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (i32.store8 (i32.add (local.get $dst) (local.get $i))
                  (call $load_u8 (i64.add (local.get $h) (i64.extend_i32_u (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $copy)))
    (local.get $len))
  ;; Sets [ptr, ptr+len) of this memory as the output.
  (func $answer (param $ptr i32) (param $len i32)
    (call $output_set (call $to_kernel (local.get $ptr) (local.get $len))
                      (i64.extend_i32_u (local.get $len))))
  (func (export "manifest") (result i32)
    (call $answer (i32.const {manifest_at}) (i32.const {manifest_len}))
    (i32.const 0))
  {invoke}
  {items}
)"#,
            imports = self.imports,
            memory = memory,
            manifest_at = MANIFEST_AT,
            manifest_text = wat_string(manifest),
            manifest_len = manifest.len(),
            invoke = invoke,
            items = self.items,
        )
    }

    pub fn bytes(&self) -> Vec<u8> {
        wat::parse_str(self.wat()).unwrap_or_else(|e| panic!("fixture WAT: {e}\n{}", self.wat()))
    }
}
