// Smoke test without the runner: a tiny JS host of the Extism kernel (`extism:host/env`) and of the
// platform functions (`extism:host/user`), then every export called in a fresh instance, as the
// runner does, with the answers checked against the contract (runner/ABI.md).
//
// Usage: node scripts/smoke.mjs build/vendor-app.wasm

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const wasm = new WebAssembly.Module(readFileSync(process.argv[2] ?? "build/vendor-app.wasm"));
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });
const API_KEY = "sk_test_7f3a9c";
const MEMORY_MIB = 16; // the manifest's memoryMiB: the runner caps the module's memory there
let peakMemory = 0;

/** One call: a flat kernel memory (handles are offsets, 0 is null), input, output, error, logs. */
function runCall(exportName, input, { secrets = { API_KEY }, httpSend = null } = {}) {
  let mem = new Uint8Array(1 << 16);
  let top = 8n; // never hand out 0
  const blocks = new Map(); // offset -> length
  const alloc = (n) => {
    if (n === 0n) return 0n;
    const at = top;
    top += n;
    while (top > BigInt(mem.length)) { const bigger = new Uint8Array(mem.length * 2); bigger.set(mem); mem = bigger; }
    blocks.set(at, n);
    return at;
  };
  const inBounds = (at, n) => at >= 0n && at + n <= BigInt(mem.length);
  const put = (bytes) => { const h = alloc(BigInt(bytes.length)); mem.set(bytes, Number(h)); return h; };
  const get = (h) => (blocks.has(h) ? mem.slice(Number(h), Number(h + blocks.get(h))) : null);
  const view = () => new DataView(mem.buffer);

  const inputBytes = enc.encode(typeof input === "string" ? input : JSON.stringify(input));
  const inputHandle = put(inputBytes);
  const inputLength = BigInt(inputBytes.length);
  let output = null;
  let error = 0n;
  const logs = [];
  const requests = [];

  const env = {
    alloc,
    free: (h) => { blocks.delete(h); },
    length: (h) => blocks.get(h) ?? 0n,
    length_unsafe: (h) => blocks.get(h) ?? 0n,
    load_u8: (at) => (inBounds(at, 1n) ? mem[Number(at)] : 0),
    load_u64: (at) => (inBounds(at, 8n) ? view().getBigUint64(Number(at), true) : 0n),
    store_u8: (at, v) => { if (inBounds(at, 1n)) mem[Number(at)] = v & 0xff; },
    store_u64: (at, v) => { if (inBounds(at, 8n)) view().setBigUint64(Number(at), BigInt.asUintN(64, v), true); },
    input_length: () => inputLength,
    input_offset: () => inputHandle,
    input_load_u8: (i) => (i < inputLength ? mem[Number(inputHandle + i)] : 0),
    input_load_u64: (i) => (i + 8n <= inputLength ? view().getBigUint64(Number(inputHandle + i), true) : 0n),
    output_set: (at, n) => { output = mem.slice(Number(at), Number(at + n)); },
    error_set: (h) => { error = h; },
    config_get: () => 0n,
    var_get: () => 0n,
    var_set: () => {},
    http_request: () => { throw new Error("http_request is not used by this app"); },
    http_status_code: () => 0,
    http_headers: () => 0n,
    log_trace: () => {}, log_debug: () => {}, log_info: () => {}, log_warn: () => {}, log_error: () => {},
    get_log_level: () => 2,
  };
  const text = (h) => { const b = get(h); if (b === null) throw new Error(`invalid handle ${h}`); return dec.decode(b); };
  const user = {
    secret_get: (h) => { const v = secrets[text(h)]; return v === undefined ? 0n : put(enc.encode(v)); },
    http_send: (h) => {
      const request = JSON.parse(text(h));
      requests.push(request);
      const answer = httpSend ? httpSend(request) : { error: { code: "not_allowed", message: "no network" } };
      return put(enc.encode(JSON.stringify(answer)));
    },
    log: (h) => { logs.push(JSON.parse(text(h))); },
    document_list: () => put(enc.encode('{"error":{"code":"not_allowed","message":"no documents"}}')),
    document_read: () => put(enc.encode('{"error":{"code":"not_allowed","message":"no documents"}}')),
  };
  const imports = {};
  for (const imp of WebAssembly.Module.imports(wasm)) {
    const table = imp.module === "extism:host/env" ? env : imp.module === "extism:host/user" ? user : {};
    if (!(imp.name in table)) throw new Error(`unexpected import ${imp.module}.${imp.name}`);
    (imports[imp.module] ??= {})[imp.name] = table[imp.name];
  }
  const instance = new WebAssembly.Instance(wasm, imports);
  const rc = instance.exports[exportName]();
  if (error !== 0n) throw new Error(`error_set: ${text(error)}`);
  const wasmBytes = instance.exports.memory.buffer.byteLength;
  peakMemory = Math.max(peakMemory, wasmBytes);
  assert.ok(wasmBytes <= MEMORY_MIB * 1024 * 1024, `module memory ${wasmBytes} bytes is over memoryMiB`);
  assert.equal(rc, 0, `${exportName} returned ${rc}`);
  assert.ok(output !== null, "no output");
  assert.ok(output.length <= 1 << 20, "output over 1 MiB");
  const raw = dec.decode(output);
  const answer = JSON.parse(raw);
  assert.ok(!raw.includes(API_KEY), "the secret appears in the output");
  for (const line of logs) assert.ok(!JSON.stringify(line).includes(API_KEY), "the secret appears in a log line");
  return { answer, logs, requests, raw };
}

// --- the contract's answer shapes (no extra fields) -------------------------------------------
const keys = (o) => Object.keys(o).sort().join(",");
function assertInvokeAnswer(a) {
  if (a.status === "ok") assert.equal(keys(a), "output,status");
  else if (a.status === "pending") { assert.equal(keys(a), "externalId,status"); assert.ok(a.externalId.length <= 200); }
  else if (a.status === "error") assert.ok(["message,status", "message,retryable,status"].includes(keys(a)), keys(a));
  else assert.fail(`bad status ${a.status}`);
}
function assertWebhookAnswer(a) {
  if (a.status === "event") {
    assert.equal(keys(a), "event,status");
    assert.ok(["completed", "failed", "pending"].includes(a.event.status));
    for (const k of Object.keys(a.event)) assert.ok(["externalId", "eventId", "status", "output", "error"].includes(k), k);
  } else if (a.status === "ignored") assert.equal(keys(a), "status");
  else if (a.status === "rejected") assert.equal(keys(a), "message,status");
  else assertInvokeAnswer(a);
}

// --- scenarios ----------------------------------------------------------------------------------
const call = { id: "0b7c6f1e-2d1a-4c59-9a57-3f0e6a2b1c11", tenantId: "6f1d0c52-8b8e-4f5e-a1c2-4a1b2c3d4e5f" };
const config = { baseUrl: "http://127.0.0.1:8089/" };
const vendor = (status, body) => () => ({ status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const invoke = (action, input, opts = {}, extra = {}) => {
  const r = runCall("invoke", { call, action, config, input, ...extra }, opts);
  assertInvokeAnswer(r.answer);
  assert.equal(r.logs.length, 1, "one log line per call");
  return r;
};
const webhook = (body, headers = {}, opts = {}) => {
  const bodyBase64 = Buffer.from(typeof body === "string" ? body : JSON.stringify(body)).toString("base64");
  const r = runCall("handle_webhook", { call, config, request: { method: "POST", headers, query: {}, bodyBase64 } }, opts);
  assertWebhookAnswer(r.answer);
  assert.equal(r.logs.length, 1, "one log line per call");
  return r;
};

const scenarios = {
  "manifest answers the manifest": () => {
    const { answer: m } = runCall("manifest", {}, { secrets: {} });
    assert.equal(m.interface, 1);
    assert.equal(m.name, "vendor-app");
    assert.equal(m.version, "1.1.0");
    assert.deepEqual(m.secrets, [{ name: "API_KEY" }]);
    assert.deepEqual(m.hosts, ["127.0.0.1"]);
    assert.deepEqual(m.configSchema.required, ["baseUrl"]);
    assert.equal(m.configSchema.properties.baseUrl.format, "uri");
    assert.deepEqual(Object.keys(m.actions), ["check", "verify"]);
    assert.equal(m.actions.check.timeoutMs, 5000);
    assert.equal(m.actions.check.idempotent, true);
    assert.deepEqual(m.actions.verify.async, { callbackTimeoutSeconds: 3600 });
    assert.deepEqual(m.handles, {
      webhook: true,
      webhookExternalId: { json: "/sessionId" },
      webhookEventId: { json: "/eventId" },
    });
    assert.equal(m.memoryMiB, 16);
    return JSON.stringify(m).slice(0, 100) + "...";
  },
  "check: vendor score 0.2 -> ok, no match": () => {
    const r = invoke("check", { name: "Ada Lovelace", country: "GB" }, { httpSend: vendor(200, { score: 0.2 }) });
    assert.deepEqual(r.answer, { status: "ok", output: { score: 0.2, match: false } });
    assert.equal(r.requests.length, 1);
    const [req] = r.requests;
    assert.equal(req.method, "POST");
    assert.equal(req.url, "http://127.0.0.1:8089/score");
    assert.equal(req.headers.authorization, `Bearer ${API_KEY}`);
    assert.deepEqual(JSON.parse(req.body), { name: "Ada Lovelace", country: "GB" });
    assert.equal(r.logs[0].level, "info");
    return `${r.raw}  log ${JSON.stringify(r.logs[0])}  request ${JSON.stringify({ ...req, headers: { ...req.headers, authorization: "Bearer [redacted]" } })}`;
  },
  "check: threshold from config, idempotency key passed on": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: vendor(200, { score: 0.2 }) },
      { config: { ...config, threshold: 0.2 }, idempotencyKey: "idem-1" });
    assert.deepEqual(r.answer, { status: "ok", output: { score: 0.2, match: true } });
    assert.equal(r.requests[0].headers["idempotency-key"], "idem-1");
    return r.raw;
  },
  "check: non-ASCII text survives both ways": () => {
    const r = invoke("check", { name: "Zoë Ångström \u{1F600} \"q\"\n", country: "SE" }, { httpSend: vendor(200, { score: 1 }) });
    assert.deepEqual(JSON.parse(r.requests[0].body), { name: "Zoë Ångström \u{1F600} \"q\"\n", country: "SE" });
    assert.deepEqual(r.answer, { status: "ok", output: { score: 1, match: true } });
    return r.raw;
  },
  "check: vendor 503 -> retryable error": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: vendor(503, { error: "busy" }) });
    assert.deepEqual(r.answer, { status: "error", message: "vendor answered 503", retryable: true });
    return r.raw;
  },
  "check: vendor 404 -> not retryable": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: vendor(404, {}) });
    assert.deepEqual(r.answer, { status: "error", message: "vendor answered 404", retryable: false });
    return r.raw;
  },
  "check: http_send error -> retryable error": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: () => ({ error: { code: "timeout", message: "no answer in 5000 ms" } }) });
    assert.equal(r.answer.status, "error");
    assert.equal(r.answer.retryable, true);
    return r.raw;
  },
  "check: vendor body not JSON -> error, no trap": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: () => ({ status: 200, headers: {}, body: "<html>" }) });
    assert.equal(r.answer.status, "error");
    return r.raw;
  },
  "check: no API_KEY secret -> error, no request": () => {
    const r = invoke("check", { name: "Ada", country: "GB" }, { secrets: {}, httpSend: vendor(200, { score: 0.2 }) });
    assert.equal(r.answer.status, "error");
    assert.equal(r.requests.length, 0);
    return r.raw;
  },
  "verify: vendor session -> pending": () => {
    const r = invoke("verify", { name: "Ada" }, { httpSend: vendor(201, { sessionId: "s-123" }) },
      { call: { ...call, callbackUrl: "https://platform.example/webhooks/apps/vendor-app" } });
    assert.deepEqual(r.answer, { status: "pending", externalId: "s-123" });
    assert.equal(r.requests[0].url, "http://127.0.0.1:8089/sessions");
    assert.equal(JSON.parse(r.requests[0].body).callbackUrl, "https://platform.example/webhooks/apps/vendor-app");
    return r.raw;
  },
  "invoke: unknown action": () => {
    const r = invoke("delete_everything", {});
    assert.deepEqual(r.answer, { status: "error", message: "unknown action" });
    return r.raw;
  },
  "invoke: input that is not JSON -> error, no trap": () => {
    const r = runCall("invoke", "{not json");
    assert.equal(r.answer.status, "error");
    return r.raw;
  },
  "webhook: approved -> completed": () => {
    const r = webhook({ sessionId: "s-123", eventId: "e-1", result: "approved" }, { "x-vendor-signature": API_KEY });
    assert.deepEqual(r.answer, { status: "event", event: { externalId: "s-123", eventId: "e-1", status: "completed", output: { verified: true } } });
    return r.raw;
  },
  "webhook: declined -> failed": () => {
    const r = webhook({ sessionId: "s-123", eventId: "e-2", result: "declined" });
    assert.deepEqual(r.answer, { status: "event", event: { externalId: "s-123", eventId: "e-2", status: "failed", error: "declined" } });
    return r.raw;
  },
  "webhook: pending -> pending": () => {
    const r = webhook({ sessionId: "s-123", eventId: "e-3", result: "pending" });
    assert.deepEqual(r.answer, { status: "event", event: { externalId: "s-123", eventId: "e-3", status: "pending" } });
    return r.raw;
  },
  "webhook: wrong signature -> rejected": () => {
    const r = webhook({ sessionId: "s-123", eventId: "e-4", result: "approved" }, { "x-vendor-signature": "forged" });
    assert.deepEqual(r.answer, { status: "rejected", message: "bad signature" });
    assert.equal(r.logs[0].level, "warn");
    return r.raw;
  },
  "webhook: no sessionId -> ignored": () => {
    const r = webhook({ eventId: "e-5", result: "approved" });
    assert.deepEqual(r.answer, { status: "ignored" });
    return r.raw;
  },
  "webhook: garbage and hostile bodies -> ignored, no trap": () => {
    for (const body of ["not json", "", "[".repeat(100000), '{"sessionId":"s-1"', '{"sessionId":"s\\ud800","eventId":"e","result":"pending"}x']) {
      assert.deepEqual(webhook(body).answer, { status: "ignored" });
    }
    const r = runCall("handle_webhook", { call, config, request: { method: "POST", headers: {}, query: {}, bodyBase64: "!!!" } });
    assert.deepEqual(r.answer, { status: "ignored" });
    return r.raw;
  },
  "webhook: a 256 KiB body (the route's limit) fits in memoryMiB": () => {
    const filler = "\"x\\".repeat(52000);
    const body = JSON.stringify({ sessionId: "s-big", eventId: "e-big", result: "approved", filler });
    assert.ok(body.length > 250 * 1024 && body.length <= 256 * 1024, `${body.length}`);
    const r = webhook(body);
    assert.equal(r.answer.event.status, "completed");
    return `${body.length} bytes -> ${r.raw}`;
  },
  "check: a 1 MiB vendor answer full of escapes fits in memoryMiB": () => {
    const body = JSON.stringify({ score: 0.7, notes: "\"a\\".repeat(115000) });
    const answerBytes = JSON.stringify({ status: 200, headers: {}, body }).length;
    assert.ok(answerBytes < 1 << 20 && answerBytes > 900 * 1024, `${answerBytes}`);
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: () => ({ status: 200, headers: {}, body }) });
    assert.deepEqual(r.answer, { status: "ok", output: { score: 0.7, match: true } });
    return `${answerBytes} bytes -> ${r.raw}`;
  },
  "check: a vendor answer over 1 MiB is not read": () => {
    const body = JSON.stringify({ score: 0.7, notes: "a".repeat(2 << 20) });
    const r = invoke("check", { name: "Ada", country: "GB" }, { httpSend: () => ({ status: 200, headers: {}, body }) });
    assert.deepEqual(r.answer, { status: "error", message: "vendor request failed: too_large", retryable: true });
    return r.raw;
  },
  "webhook: escapes and lone surrogates stay valid JSON": () => {
    const r = webhook('{"sessionId":"s-\\u00e9\\ud83d\\ude00","eventId":"e-\\ud800\\u0001","result":"pending"}');
    assert.equal(r.answer.event.externalId, "s-é\u{1F600}");
    assert.equal(r.answer.event.eventId, "e-\ud800\u0001");
    return r.raw;
  },
};

let passed = 0, failed = 0;
for (const [name, run] of Object.entries(scenarios)) {
  try {
    const detail = run();
    passed++;
    console.log(`ok   ${name}\n       ${detail}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n       ${e.stack ?? e}`);
  }
}
console.log(`peak module memory: ${(peakMemory / 1048576).toFixed(2)} MiB (cap ${MEMORY_MIB} MiB)`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
