// vendor-app: an example app for a fictitious KYC vendor.
//
// Exports (each `() -> i32`, 0 = the answer was set; see runner/ABI.md):
//   manifest        what the app is, its configuration, secrets, hosts and actions
//   invoke          `check` (synchronous score) and `verify` (asynchronous session)
//   handle_webhook  the vendor's session results
//
// Every answer, errors included, is a JSON document: the module never traps on bad input.

import { decodeBase64 } from "./base64";
import { httpSend, inputText, logLine, outputText, secret } from "./host";
import { JObj, JValue, ObjectWriter, numberText, parseObject, quote } from "./json";

const SECRET_NAME = "API_KEY";
const DEFAULT_THRESHOLD: f64 = 0.5;
const MAX_EXTERNAL_ID = 200;

// ---------------------------------------------------------------------------------------------
// manifest (a plain literal, so it sits in the data segment and costs nothing at instantiation)

const MANIFEST = `{
  "interface": 1,
  "name": "vendor-app",
  "version": "1.1.0",
  "description": "Sanctions and PEP screening (check) and document-based identity verification (verify) by Example KYC.",
  "vendor": "Example KYC Ltd.",
  "secrets": [{"name": "API_KEY"}],
  "hosts": ["127.0.0.1"],
  "configSchema": {
    "type": "object",
    "properties": {
      "baseUrl": {"type": "string", "format": "uri", "description": "Base URL of the vendor API, without a trailing slash."},
      "threshold": {"type": "number", "minimum": 0, "maximum": 1, "description": "Score at or above which check reports a match (default 0.5)."}
    },
    "required": ["baseUrl"],
    "additionalProperties": false
  },
  "actions": {
    "check": {
      "description": "Screens a person against sanctions and PEP lists.",
      "input": {
        "type": "object",
        "properties": {
          "name": {"type": "string", "minLength": 1},
          "country": {"type": "string", "minLength": 1}
        },
        "required": ["name", "country"]
      },
      "output": {
        "type": "object",
        "properties": {
          "score": {"type": "number"},
          "match": {"type": "boolean"}
        },
        "required": ["score", "match"]
      },
      "timeoutMs": 5000,
      "idempotent": true
    },
    "verify": {
      "description": "Starts an identity verification session; the result arrives by webhook.",
      "input": {
        "type": "object",
        "properties": {
          "name": {"type": "string", "minLength": 1}
        },
        "required": ["name"]
      },
      "output": {
        "type": "object",
        "properties": {
          "verified": {"type": "boolean"}
        },
        "required": ["verified"]
      },
      "async": {"callbackTimeoutSeconds": 3600}
    }
  },
  "handles": {"webhook": true, "webhookExternalId": {"json": "/sessionId"}, "webhookEventId": {"json": "/eventId"}},
  "memoryMiB": 16
}`;

export function manifest(): i32 {
  outputText(MANIFEST);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Answers. Each call logs exactly one line, with the answer it gives.

function answer(json: string, level: string, logMessage: string): i32 {
  logLine(level, logMessage);
  outputText(json);
  return 0;
}

function errorAnswer(what: string, message: string, retryable: bool): i32 {
  const json = new ObjectWriter()
    .str("status", "error")
    .str("message", message)
    .bool("retryable", retryable)
    .toString();
  return answer(json, "warn", what + ": " + message);
}

// ---------------------------------------------------------------------------------------------
// invoke: {call, action, idempotencyKey?, config, input}

export function invoke(): i32 {
  const request = parseObject(inputText());
  if (request === null) return errorAnswer("invoke", "the request is not a JSON object", false);
  const action = request.getString("action");
  if (action === null) return errorAnswer("invoke", "the request names no action", false);

  if (action == "check") return check(request);
  if (action == "verify") return verify(request);

  // The exact answer the contract tests expect: no `retryable`.
  logLine("warn", "invoke: unknown action " + quote(action));
  outputText(`{"status":"error","message":"unknown action"}`);
  return 0;
}

/** What check and verify share: the vendor's base URL and the API key. */
class Vendor {
  baseUrl: string = "";
  apiKey: string = "";
  problem: string | null = null;
}

function vendorFor(request: JObj): Vendor {
  const v = new Vendor();
  const config = request.getObject("config");
  const baseUrl = config !== null ? config.getString("baseUrl") : null;
  if (baseUrl === null || baseUrl.length == 0) {
    v.problem = "config.baseUrl is missing";
    return v;
  }
  v.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length - 1) : baseUrl;
  const key = secret(SECRET_NAME);
  if (key === null) {
    v.problem = "the secret " + SECRET_NAME + " is not set";
    return v;
  }
  v.apiKey = key;
  return v;
}

/** Builds the http_send request: a JSON POST with the API key as a bearer token. */
function vendorPost(vendor: Vendor, path: string, body: string, idempotencyKey: string | null): string {
  const headers = new ObjectWriter()
    .str("authorization", "Bearer " + vendor.apiKey)
    .str("content-type", "application/json")
    .str("accept", "application/json");
  if (idempotencyKey !== null) headers.str("idempotency-key", idempotencyKey);
  return new ObjectWriter()
    .str("method", "POST")
    .str("url", vendor.baseUrl + path)
    .raw("headers", headers.toString())
    .str("body", body)
    .toString();
}

/** The vendor's answer to one request: its JSON body on a 2xx, or the error answer to give. */
class VendorResult {
  body: JObj | null = null;
  status: i32 = 0;
  // When body is null:
  message: string = "";
  retryable: bool = false;
}

function callVendor(requestJson: string): VendorResult {
  const r = new VendorResult();
  const sent = httpSend(requestJson);
  const raw = sent.json;
  if (raw === null) {
    r.message = "vendor request failed: " + sent.problem;
    r.retryable = true;
    return r;
  }
  const answer = parseObject(raw);
  if (answer === null) {
    r.message = "vendor request failed: unreadable answer";
    r.retryable = true;
    return r;
  }
  // {"error": {"code", "message"}}: the platform could not send the request or read the answer.
  const error = answer.getObject("error");
  if (error !== null) {
    const code = error.getString("code");
    const message = error.getString("message");
    r.message =
      "vendor request failed: " +
      (code !== null ? code : "unknown") +
      (message !== null ? " (" + message + ")" : "");
    r.retryable = true;
    return r;
  }
  // {"status", "headers", "body" | "bodyBase64"}
  const status = answer.getNumber("status");
  if (isNaN(status)) {
    r.message = "vendor request failed: unreadable answer";
    r.retryable = true;
    return r;
  }
  r.status = <i32>status;
  if (r.status < 200 || r.status > 299) {
    r.message = "vendor answered " + r.status.toString();
    r.retryable = r.status >= 500;
    return r;
  }
  const text = answer.getString("body");
  const body = text !== null ? parseObject(text) : null;
  if (body === null) {
    r.message = "vendor answered " + r.status.toString() + " with a body that is not a JSON object";
    r.retryable = true;
    return r;
  }
  r.body = body;
  return r;
}

/** check: a synchronous score. input {name, country} → output {score, match}. */
function check(request: JObj): i32 {
  const input = request.getObject("input");
  const name = input !== null ? input.getString("name") : null;
  const country = input !== null ? input.getString("country") : null;
  if (name === null || country === null) {
    return errorAnswer("check", "input.name and input.country must be strings", false);
  }
  const vendor = vendorFor(request);
  const problem = vendor.problem;
  if (problem !== null) return errorAnswer("check", problem, false);

  const config = request.getObject("config");
  let threshold = config !== null ? config.getNumber("threshold") : NaN;
  if (isNaN(threshold)) threshold = DEFAULT_THRESHOLD;

  const body = new ObjectWriter().str("name", name).str("country", country).toString();
  const result = callVendor(vendorPost(vendor, "/score", body, request.getString("idempotencyKey")));
  const vendorBody = result.body;
  if (vendorBody === null) return errorAnswer("check", result.message, result.retryable);

  const score = vendorBody.getNumber("score");
  if (isNaN(score)) {
    return errorAnswer("check", "vendor answered " + result.status.toString() + " without a score", true);
  }
  const match = score >= threshold;
  const output = new ObjectWriter().num("score", score).bool("match", match).toString();
  return answer(
    new ObjectWriter().str("status", "ok").raw("output", output).toString(),
    "info",
    "check: vendor answered " +
      result.status.toString() +
      ", score " +
      numberText(score) +
      (match ? ", match" : ", no match"),
  );
}

/** verify: an asynchronous session. input {name} → pending with the vendor's session id. */
function verify(request: JObj): i32 {
  const input = request.getObject("input");
  const name = input !== null ? input.getString("name") : null;
  if (name === null) return errorAnswer("verify", "input.name must be a string", false);
  const vendor = vendorFor(request);
  const problem = vendor.problem;
  if (problem !== null) return errorAnswer("verify", problem, false);

  // The vendor reports the result to the platform's webhook route when it knows where that is.
  const body = new ObjectWriter().str("name", name);
  const call = request.getObject("call");
  if (call !== null) {
    const callId = call.getString("id");
    if (callId !== null) body.str("reference", callId);
    const callbackUrl = call.getString("callbackUrl");
    if (callbackUrl !== null) body.str("callbackUrl", callbackUrl);
  }
  const result = callVendor(
    vendorPost(vendor, "/sessions", body.toString(), request.getString("idempotencyKey")),
  );
  const vendorBody = result.body;
  if (vendorBody === null) return errorAnswer("verify", result.message, result.retryable);

  const sessionId = vendorBody.getString("sessionId");
  if (sessionId === null || sessionId.length == 0 || sessionId.length > MAX_EXTERNAL_ID) {
    return errorAnswer("verify", "vendor answered " + result.status.toString() + " without a usable sessionId", true);
  }
  return answer(
    new ObjectWriter().str("status", "pending").str("externalId", sessionId).toString(),
    "info",
    "verify: session " + quote(sessionId) + " started",
  );
}

// ---------------------------------------------------------------------------------------------
// handle_webhook: {call, config, request: {method, headers, query, bodyBase64}}
// Body: {"sessionId", "eventId", "result": "approved" | "declined" | "pending"}

/** Compares without stopping at the first difference (the length is not hidden). */
function sameSecret(a: string, b: string): bool {
  if (a.length != b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff == 0;
}

function ignored(reason: string): i32 {
  return answer(`{"status":"ignored"}`, "info", "webhook: ignored, " + reason);
}

export function handle_webhook(): i32 {
  const input = parseObject(inputText());
  if (input === null) return errorAnswer("webhook", "the request is not a JSON object", false);
  const request = input.getObject("request");
  if (request === null) return errorAnswer("webhook", "the request has no request object", false);

  // Demo signature: the vendor sends the API key itself. A real vendor signs the body (HMAC).
  const headers = request.getObject("headers");
  const signature: JValue | null = headers !== null ? headers.get("x-vendor-signature") : null;
  if (signature !== null) {
    const given = headers !== null ? headers.getString("x-vendor-signature") : null;
    const key = secret(SECRET_NAME);
    if (given === null || key === null || !sameSecret(given, key)) {
      return answer(`{"status":"rejected","message":"bad signature"}`, "warn", "webhook: rejected, bad signature");
    }
  }

  const encoded = request.getString("bodyBase64");
  if (encoded === null) return ignored("no body");
  const bytes = decodeBase64(encoded);
  if (bytes === null) return ignored("body is not base64");
  const body = parseObject(String.UTF8.decode(bytes.buffer));
  if (body === null) return ignored("body is not a JSON object");

  const sessionId = body.getString("sessionId");
  if (sessionId === null || sessionId.length == 0 || sessionId.length > MAX_EXTERNAL_ID) {
    return ignored("no sessionId");
  }
  const eventId = body.getString("eventId");
  if (eventId === null || eventId.length == 0) return ignored("no eventId");
  const result = body.getString("result");

  const event = new ObjectWriter().str("externalId", sessionId).str("eventId", eventId);
  if (result == "approved") {
    event.str("status", "completed").raw("output", `{"verified":true}`);
  } else if (result == "declined") {
    event.str("status", "failed").str("error", "declined");
  } else if (result == "pending") {
    event.str("status", "pending");
  } else {
    return ignored("unknown result");
  }
  return answer(
    new ObjectWriter().str("status", "event").raw("event", event.toString()).toString(),
    "info",
    "webhook: session " + quote(sessionId) + " " + (result !== null ? result : ""),
  );
}
