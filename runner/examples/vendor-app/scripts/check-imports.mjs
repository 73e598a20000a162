// Checks a built module against the platform's module rules (runner/ABI.md, "The shape of a
// module"): only kernel, platform and WASI preview 1 imports, each with the right wasm type; its
// own memory; the exports `manifest`, `invoke`, `handle_webhook` as `() -> i32`.
// Reads the binary's type, import, function, memory and export sections itself, because the
// WebAssembly JS API does not tell function types.
//
// Usage: node scripts/check-imports.mjs build/vendor-app.wasm

import { readFileSync, statSync } from "node:fs";

const KERNEL = {
  alloc: "(i64) -> i64", free: "(i64) -> ()", length: "(i64) -> i64", length_unsafe: "(i64) -> i64",
  load_u8: "(i64) -> i32", load_u64: "(i64) -> i64", store_u8: "(i64, i32) -> ()", store_u64: "(i64, i64) -> ()",
  input_length: "() -> i64", input_offset: "() -> i64", input_load_u8: "(i64) -> i32", input_load_u64: "(i64) -> i64",
  input_set: "(i64, i64) -> ()", output_set: "(i64, i64) -> ()", output_length: "() -> i64", output_offset: "() -> i64",
  error_set: "(i64) -> ()", error_get: "() -> i64", reset: "() -> ()", memory_bytes: "() -> i64",
  config_get: "(i64) -> i64", var_get: "(i64) -> i64", var_set: "(i64, i64) -> ()",
  http_request: "(i64, i64) -> i64", http_status_code: "() -> i32", http_headers: "() -> i64",
  log_trace: "(i64) -> ()", log_debug: "(i64) -> ()", log_info: "(i64) -> ()", log_warn: "(i64) -> ()",
  log_error: "(i64) -> ()", get_log_level: "() -> i32",
};
const PLATFORM = {
  http_send: "(i64) -> i64", secret_get: "(i64) -> i64", document_list: "(i64) -> i64",
  document_read: "(i64) -> i64", log: "(i64) -> ()",
};
const REQUIRED_EXPORTS = ["manifest", "invoke", "handle_webhook"];
const MAX_BYTES = 32 * 1024 * 1024;
const MIN_MEMORY_MIB = 16; // the smallest memoryMiB: the initial memory must fit under it

const path = process.argv[2] ?? "build/vendor-app.wasm";
const bytes = readFileSync(path);
const problems = [];

// --- a minimal reader of the binary format -----------------------------------------------------
let pos = 0;
const u8 = () => bytes[pos++];
const leb = () => {
  let result = 0, shift = 0, b;
  do { b = u8(); result += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
  return result;
};
const name = () => { const n = leb(); const s = bytes.subarray(pos, pos + n).toString("utf8"); pos += n; return s; };
const VALTYPES = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x7b: "v128", 0x70: "funcref", 0x6f: "externref" };
const valtype = () => { const t = u8(); return VALTYPES[t] ?? `0x${t.toString(16)}`; };
const limits = () => { const flags = u8(); const min = leb(); const max = flags & 1 ? leb() : null; return { flags, min, max }; };

if (bytes.readUInt32LE(0) !== 0x6d736100 || bytes.readUInt32LE(4) !== 1) throw new Error(`${path}: not a wasm module`);
new WebAssembly.Module(bytes); // validates the whole module

const types = [], imports = [], funcTypes = [], memories = [], exports = [];
pos = 8;
while (pos < bytes.length) {
  const id = u8();
  const size = leb();
  const end = pos + size;
  if (id === 1) {
    for (let n = leb(); n > 0; n--) {
      if (u8() !== 0x60) throw new Error("unexpected type form");
      const params = Array.from({ length: leb() }, valtype);
      const results = Array.from({ length: leb() }, valtype);
      types.push(`(${params.join(", ")}) -> ${results.length === 0 ? "()" : results.join(", ")}`);
    }
  } else if (id === 2) {
    for (let n = leb(); n > 0; n--) {
      const module = name(), field = name(), kind = u8();
      if (kind === 0) { const t = types[leb()]; imports.push({ module, field, kind: "function", type: t }); funcTypes.push(t); }
      else if (kind === 1) { valtype(); limits(); imports.push({ module, field, kind: "table" }); }
      else if (kind === 2) { limits(); imports.push({ module, field, kind: "memory" }); }
      else if (kind === 3) { valtype(); u8(); imports.push({ module, field, kind: "global" }); }
      else { imports.push({ module, field, kind: `kind ${kind}` }); break; }
    }
  } else if (id === 3) {
    for (let n = leb(); n > 0; n--) funcTypes.push(types[leb()]);
  } else if (id === 5) {
    for (let n = leb(); n > 0; n--) memories.push(limits());
  } else if (id === 7) {
    for (let n = leb(); n > 0; n--) {
      const field = name(), kind = u8(), index = leb();
      exports.push({ field, kind, index });
    }
  }
  pos = end;
}

// --- the rules -----------------------------------------------------------------------------------
for (const imp of imports) {
  const where = `import ${imp.module}.${imp.field}`;
  if (imp.kind === "memory") { problems.push(`${where}: imported memory (imported_memory)`); continue; }
  if (imp.kind !== "function") { problems.push(`${where}: a ${imp.kind} import`); continue; }
  let expected;
  if (imp.module === "extism:host/env") expected = KERNEL[imp.field];
  else if (imp.module === "extism:host/user") expected = PLATFORM[imp.field];
  else if (imp.module === "wasi_snapshot_preview1") {
    if (imp.field.startsWith("sock_") || imp.field.startsWith("path_")) problems.push(`${where}: forbidden WASI function`);
    continue;
  }
  if (expected === undefined) problems.push(`${where}: forbidden import`);
  else if (expected !== imp.type) problems.push(`${where}: type ${imp.type}, the runner defines ${expected}`);
}
if (memories.length !== 1) problems.push(`the module defines ${memories.length} memories, it must define one`);
else if (memories[0].min > MIN_MEMORY_MIB * 16) problems.push(`initial memory ${memories[0].min} pages is over ${MIN_MEMORY_MIB} MiB`);
for (const field of REQUIRED_EXPORTS) {
  const exp = exports.find((e) => e.field === field);
  if (!exp || exp.kind !== 0) { problems.push(`missing export ${field}`); continue; }
  const type = funcTypes[exp.index];
  if (type !== "() -> i32" && type !== "() -> ()") problems.push(`export ${field}: type ${type}, must be () -> i32`);
}
if (statSync(path).size > MAX_BYTES) problems.push("module over 32 MiB");

// --- report ----------------------------------------------------------------------------------------
console.log(`${path}: ${bytes.length} bytes`);
for (const imp of imports) console.log(`  import ${imp.module} ${imp.field} ${imp.type ?? imp.kind}`);
for (const exp of exports) {
  const what = exp.kind === 0 ? funcTypes[exp.index] : ["function", "table", "memory", "global"][exp.kind];
  console.log(`  export ${exp.field} ${what}`);
}
for (const m of memories) console.log(`  memory initial ${m.min} pages, maximum ${m.max ?? "none (the platform writes memoryMiB)"}`);
if (problems.length > 0) {
  for (const p of problems) console.error(`PROBLEM: ${p}`);
  process.exit(1);
}
console.log("module rules: ok");
