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
    /// Instructions the `manifest` export runs before it answers the manifest (for inspection
    /// tests: a loop, a platform call whose answer it checks).
    pub manifest_prelude: String,
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
    {manifest_prelude}
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
            manifest_prelude = self.manifest_prelude,
            invoke = invoke,
            items = self.items,
        )
    }

    pub fn bytes(&self) -> Vec<u8> {
        wat::parse_str(self.wat()).unwrap_or_else(|e| panic!("fixture WAT: {e}\n{}", self.wat()))
    }
}

/// Where [`Script`] places its literals; the digits of numbers are written just below.
const LITERALS_AT: u32 = 16384;
/// Where [`Script`] assembles its answer ([`SCRATCH`] onwards).
const OUT_AT: u32 = SCRATCH;

/// Builds an export body that assembles its answer piece by piece: literal text, the bytes of
/// kernel blocks and decimal numbers, appended in order to a buffer at [`SCRATCH`] and set as the
/// output by [`FINISH`]. Literals live in data segments from address 16384 on.
#[derive(Debug)]
pub struct Script {
    data: Vec<(u32, String)>,
    next: u32,
}

impl Default for Script {
    fn default() -> Self {
        Self::new()
    }
}

/// Instruction: sets the answer assembled so far as the output.
pub const FINISH: &str = "(call $finish)";

/// Instruction: appends the bytes of the kernel block `handle` (an i64 expression).
pub fn put_block(handle: &str) -> String {
    format!("(call $put_block {handle})")
}

/// Instruction: appends the i64 expression `value` in decimal.
pub fn put_number(value: &str) -> String {
    format!("(call $put_number {value})")
}

impl Script {
    pub fn new() -> Self {
        Self {
            data: Vec::new(),
            next: LITERALS_AT,
        }
    }

    /// Places `text` in the module's memory; answers its address and length.
    pub fn place(&mut self, text: &str) -> (u32, usize) {
        let at = self.next;
        self.data.push((at, text.to_owned()));
        self.next += text.len() as u32 + 1;
        assert!(
            self.next < OUT_AT,
            "literals overflow into the answer buffer"
        );
        (at, text.len())
    }

    /// Instruction: appends `text` to the answer.
    pub fn put(&mut self, text: &str) -> String {
        let (at, len) = self.place(text);
        format!("(call $put (i32.const {at}) (i32.const {len}))")
    }

    /// Expression (i64): the handle of a new kernel block holding `text`.
    pub fn block(&mut self, text: &str) -> String {
        let (at, len) = self.place(text);
        format!("(call $to_kernel (i32.const {at}) (i32.const {len}))")
    }

    /// Expression (i32): 1 when the kernel block `handle` (an i64 expression) starts with
    /// `prefix`, else 0.
    pub fn starts_with(&mut self, handle: &str, prefix: &str) -> String {
        let (at, len) = self.place(prefix);
        format!("(call $starts_with {handle} (i32.const {at}) (i32.const {len}))")
    }

    /// The data segments and helper functions, to add to a fixture's `items`.
    pub fn items(&self) -> String {
        let mut items: String = self
            .data
            .iter()
            .map(|(at, text)| format!("(data (i32.const {at}) \"{}\")\n", wat_string(text)))
            .collect();
        items.push_str(&format!(
            r#"
  (global $out (mut i32) (i32.const 0))
  (func $put (param $ptr i32) (param $len i32)
    (memory.copy (i32.add (i32.const {out}) (global.get $out)) (local.get $ptr) (local.get $len))
    (global.set $out (i32.add (global.get $out) (local.get $len))))
  (func $put_block (param $h i64)
    (global.set $out (i32.add (global.get $out)
      (call $from_kernel (local.get $h) (i32.add (i32.const {out}) (global.get $out))))))
  (func $put_number (param $v i64)
    (local $p i32) (local $u i64)
    (local.set $u (local.get $v))
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then
        (i32.store8 (i32.add (i32.const {out}) (global.get $out)) (i32.const 45))
        (global.set $out (i32.add (global.get $out) (i32.const 1)))
        (local.set $u (i64.sub (i64.const 0) (local.get $v)))))
    (local.set $p (i32.const {digits_end}))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $u) (i64.const 10)))))
      (local.set $u (i64.div_u (local.get $u) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $u) (i64.const 0))))
    (call $put (local.get $p) (i32.sub (i32.const {digits_end}) (local.get $p))))
  (func $starts_with (param $h i64) (param $ptr i32) (param $len i32) (result i32)
    (local $i i32)
    (if (i64.lt_u (call $length (local.get $h)) (i64.extend_i32_u (local.get $len)))
      (then (return (i32.const 0))))
    (block $done (loop $compare
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (if (i32.ne (call $load_u8 (i64.add (local.get $h) (i64.extend_i32_u (local.get $i))))
                  (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (then (return (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $compare)))
    (i32.const 1))
  (func $finish
    (call $answer (i32.const {out}) (global.get $out)))
"#,
            out = OUT_AT,
            digits_end = LITERALS_AT,
        ));
        items
    }

    /// A fixture whose `invoke` runs `body`, then answers what it assembled.
    pub fn invoke(&self, imports: &str, body: &str) -> Fixture {
        Fixture {
            imports: imports.to_owned(),
            items: self.items(),
            invoke: format!("{body} {FINISH} (i32.const 0)"),
            ..Fixture::default()
        }
    }
}
