// The platform's side of the ABI: its functions in `extism:host/user` and a few helpers over the
// kernel memory that @extism/as-pdk exposes (handles are i64 offsets into a memory the host keeps
// for the call; the module copies bytes in and out).

import { Host, Memory } from "@extism/as-pdk";
import { error_set, free, length } from "@extism/as-pdk/lib/env";
import { ObjectWriter } from "./json";

// Each takes a handle to a UTF-8 argument and answers a handle to a JSON answer (or 0). They never
// trap on a refusal: a failure answers {"error": {"code", "message"}}. They do not free their
// arguments.
@external("extism:host/user", "http_send")
declare function http_send(request: u64): u64;
@external("extism:host/user", "secret_get")
declare function secret_get(name: u64): u64;
@external("extism:host/user", "log")
declare function log(entry: u64): void;

/** Vendor answers larger than this are not read (the runner allows up to 8 MiB). */
export const MAX_ANSWER_BYTES: u64 = 1 << 20;

/** Copies `s` into a new block of kernel memory as UTF-8; 0 for the empty string. */
function writeString(s: string): u64 {
  return Memory.allocateString(s).offset;
}

/** The UTF-8 text of the block at `handle`, or null when the handle is 0 or empty. */
function readString(handle: u64): string | null {
  if (handle == 0) return null;
  const n = length(handle);
  if (n == 0) return null;
  return new Memory(handle, n).toString();
}

/** The whole input of the call, decoded from UTF-8. */
export function inputText(): string {
  return Host.inputString();
}

/**
 * Sets the call's answer. Host.outputString in as-pdk 1.0.0 sizes the block with the UTF-16 length,
 * which cuts non-ASCII text short; encoding first gives the exact UTF-8 length.
 */
export function outputText(json: string): void {
  Host.output(Uint8Array.wrap(String.UTF8.encode(json)));
}

/** The install's secret `name`, or null when it has none. */
export function secret(name: string): string | null {
  const arg = writeString(name);
  const h = secret_get(arg);
  free(arg);
  const value = readString(h);
  if (h != 0) free(h);
  return value;
}

/** One log line through the platform (`info`, `warn` or `error`). Never give it a secret. */
export function logLine(level: string, message: string): void {
  const entry = writeString(new ObjectWriter().str("level", level).str("message", message).toString());
  log(entry);
  free(entry);
}

/** The outcome of one http_send. */
export class HttpAnswer {
  /** The raw JSON answer of http_send, or null when it answered nothing or too much. */
  json: string | null = null;
  /** Set when the answer was not read: "empty" or "too_large". */
  problem: string = "";
}

/** Sends one request (JSON `{method, url, headers, body}`) through the platform. */
export function httpSend(requestJson: string): HttpAnswer {
  const arg = writeString(requestJson);
  const h = http_send(arg);
  free(arg);
  const answer = new HttpAnswer();
  const n = h == 0 ? 0 : length(h);
  if (n == 0) answer.problem = "empty";
  else if (n > MAX_ANSWER_BYTES) answer.problem = "too_large";
  else answer.json = new Memory(h, n).toString();
  if (h != 0) free(h);
  return answer;
}

// ---------------------------------------------------------------------------------------------
// abort: built with `--use abort=assembly/host/abort`, so the module does not import `env.abort`
// (the platform refuses that import). It hands the message to the host as the call's error and
// traps; the runner reports the call as `trapped`.

let aborting = false;

export function abort(
  message: string | null,
  fileName: string | null,
  lineNumber: u32,
  columnNumber: u32,
): void {
  if (!aborting) {
    aborting = true; // an abort while building the message (out of memory) must not recurse
    const text =
      "abort: " +
      (message !== null ? message : "") +
      " at " +
      (fileName !== null ? fileName : "?") +
      ":" +
      lineNumber.toString() +
      ":" +
      columnNumber.toString();
    error_set(writeString(text));
  }
  unreachable();
}
