// A small, strict JSON reader and writer (RFC 8259).
//
// Why not a library: AssemblyScript has no exceptions, so the AssemblyScript JSON libraries
// (assemblyscript-json, json-as) abort, which is a wasm trap, on malformed text. This app parses
// text that anyone can send (webhook bodies arrive on a public route) and vendor answers it does
// not control; a trap there would fail the call and count against the app's circuit. `parse`
// below answers null instead, so the app can answer `ignored` or a clean error.

/** Nesting deeper than this is refused (protects the 512 KiB wasm stack). */
const MAX_DEPTH: i32 = 64;

export class JValue {}

export class JNull extends JValue {}

export class JBool extends JValue {
  constructor(public value: bool) {
    super();
  }
}

export class JNum extends JValue {
  constructor(public value: f64) {
    super();
  }
}

export class JStr extends JValue {
  constructor(public value: string) {
    super();
  }
}

export class JArr extends JValue {
  items: JValue[] = [];
}

export class JObj extends JValue {
  keys: string[] = [];
  values: JValue[] = [];

  /** The member `key` (the last one when a key repeats), or null. */
  get(key: string): JValue | null {
    for (let i = this.keys.length - 1; i >= 0; i--) {
      if (this.keys[i] == key) return this.values[i];
    }
    return null;
  }

  /** The member `key` when it is a string, else null. */
  getString(key: string): string | null {
    const v = this.get(key);
    if (v !== null && v instanceof JStr) return (<JStr>v).value;
    return null;
  }

  /** The member `key` when it is a number, else NaN. */
  getNumber(key: string): f64 {
    const v = this.get(key);
    if (v !== null && v instanceof JNum) return (<JNum>v).value;
    return NaN;
  }

  /** The member `key` when it is an object, else null. */
  getObject(key: string): JObj | null {
    const v = this.get(key);
    if (v !== null && v instanceof JObj) return <JObj>v;
    return null;
  }
}

/** Parses one JSON document; null when `text` is not exactly one valid JSON value. */
export function parse(text: string): JValue | null {
  const p = new Parser(text);
  const v = p.value();
  if (v === null || !p.ok) return null;
  p.skipSpace();
  if (p.pos != text.length) return null;
  return v;
}

/** Parses `text` and answers it when it is a JSON object, else null. */
export function parseObject(text: string): JObj | null {
  const v = parse(text);
  if (v !== null && v instanceof JObj) return <JObj>v;
  return null;
}

class Parser {
  pos: i32 = 0;
  ok: bool = true;
  depth: i32 = 0;

  constructor(public text: string) {}

  fail(): JValue | null {
    this.ok = false;
    return null;
  }

  skipSpace(): void {
    const text = this.text;
    const n = text.length;
    while (this.pos < n) {
      const c = text.charCodeAt(this.pos);
      if (c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d) this.pos++;
      else break;
    }
  }

  value(): JValue | null {
    this.skipSpace();
    if (this.pos >= this.text.length) return this.fail();
    const c = this.text.charCodeAt(this.pos);
    if (c == 0x7b /* { */) return this.object();
    if (c == 0x5b /* [ */) return this.array();
    if (c == 0x22 /* " */) {
      const s = this.string();
      return s === null ? this.fail() : new JStr(s);
    }
    if (c == 0x74 /* t */) return this.literal("true", new JBool(true));
    if (c == 0x66 /* f */) return this.literal("false", new JBool(false));
    if (c == 0x6e /* n */) return this.literal("null", new JNull());
    if (c == 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) return this.number();
    return this.fail();
  }

  literal(word: string, v: JValue): JValue | null {
    if (this.text.substr(this.pos, word.length) != word) return this.fail();
    this.pos += word.length;
    return v;
  }

  object(): JValue | null {
    if (++this.depth > MAX_DEPTH) return this.fail();
    this.pos++; // {
    const obj = new JObj();
    this.skipSpace();
    if (this.peek() == 0x7d /* } */) {
      this.pos++;
      this.depth--;
      return obj;
    }
    let more = true;
    while (more) {
      this.skipSpace();
      if (this.peek() != 0x22) return this.fail();
      const key = this.string();
      if (key === null) return this.fail();
      this.skipSpace();
      if (this.peek() != 0x3a /* : */) return this.fail();
      this.pos++;
      const v = this.value();
      if (v === null) return this.fail();
      obj.keys.push(key);
      obj.values.push(v);
      this.skipSpace();
      const c = this.peek();
      this.pos++;
      if (c == 0x7d /* } */) more = false;
      else if (c != 0x2c /* , */) return this.fail();
    }
    this.depth--;
    return obj;
  }

  array(): JValue | null {
    if (++this.depth > MAX_DEPTH) return this.fail();
    this.pos++; // [
    const arr = new JArr();
    this.skipSpace();
    if (this.peek() == 0x5d /* ] */) {
      this.pos++;
      this.depth--;
      return arr;
    }
    let more = true;
    while (more) {
      const v = this.value();
      if (v === null) return this.fail();
      arr.items.push(v);
      this.skipSpace();
      const c = this.peek();
      this.pos++;
      if (c == 0x5d /* ] */) more = false;
      else if (c != 0x2c /* , */) return this.fail();
    }
    this.depth--;
    return arr;
  }

  peek(): i32 {
    return this.pos < this.text.length ? this.text.charCodeAt(this.pos) : -1;
  }

  /** Reads a string literal starting at the opening quote; null when it is malformed. */
  string(): string | null {
    const text = this.text;
    const n = text.length;
    const start = ++this.pos; // after the opening quote
    // Find the closing quote; without escapes the string is one substring.
    let i = start;
    let escapes = false;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c == 0x22) break;
      if (c < 0x20) return null;
      if (c == 0x5c) {
        escapes = true;
        i++;
      }
      i++;
    }
    if (i >= n) return null; // no closing quote
    this.pos = i + 1;
    if (!escapes) return text.substring(start, i);

    // Decode into one buffer of UTF-16 units (never longer than the literal), then one string:
    // with --runtime stub nothing is freed, so no string per escape.
    const out = new Uint16Array(i - start);
    let k = 0;
    let j = start;
    while (j < i) {
      const c = text.charCodeAt(j++);
      if (c != 0x5c) {
        out[k++] = <u16>c;
        continue;
      }
      const e = text.charCodeAt(j++);
      let u: i32 = -1;
      if (e == 0x22) u = 0x22;
      else if (e == 0x5c) u = 0x5c;
      else if (e == 0x2f) u = 0x2f;
      else if (e == 0x62) u = 0x08;
      else if (e == 0x66) u = 0x0c;
      else if (e == 0x6e) u = 0x0a;
      else if (e == 0x72) u = 0x0d;
      else if (e == 0x74) u = 0x09;
      else if (e == 0x75 /* u */ && j + 4 <= i) {
        u = 0;
        for (let d = 0; d < 4; d++) {
          const h = hexDigit(text.charCodeAt(j++));
          if (h < 0) return null;
          u = (u << 4) | h;
        }
        // One UTF-16 unit; a surrogate pair written as two escapes joins up by itself.
      }
      if (u < 0) return null;
      out[k++] = <u16>u;
    }
    return String.UTF16.decodeUnsafe(out.dataStart, <usize>k << 1);
  }

  number(): JValue | null {
    const start = this.pos;
    if (this.peek() == 0x2d) this.pos++;
    // int: 0 | [1-9][0-9]*
    if (this.peek() == 0x30) {
      this.pos++;
    } else if (isDigit(this.peek())) {
      while (isDigit(this.peek())) this.pos++;
    } else return this.fail();
    // frac
    if (this.peek() == 0x2e /* . */) {
      this.pos++;
      if (!isDigit(this.peek())) return this.fail();
      while (isDigit(this.peek())) this.pos++;
    }
    // exp
    const e = this.peek();
    if (e == 0x65 || e == 0x45) {
      this.pos++;
      const s = this.peek();
      if (s == 0x2b || s == 0x2d) this.pos++;
      if (!isDigit(this.peek())) return this.fail();
      while (isDigit(this.peek())) this.pos++;
    }
    const value = parseFloat(this.text.substring(start, this.pos));
    if (!isFinite(value)) return this.fail(); // 1e999 and the like
    return new JNum(value);
  }
}

function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}

function hexDigit(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Writing

const HEX = "0123456789abcdef";

/** `s` as a JSON string literal. Lone surrogates are escaped, so the UTF-8 output stays valid. */
export function quote(s: string): string {
  const parts = new Array<string>();
  parts.push('"');
  let start = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c == 0x22) esc = '\\"';
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c == 0x08) esc = "\\b";
    else if (c == 0x0c) esc = "\\f";
    else if (c < 0x20) esc = unicodeEscape(c);
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A high surrogate is fine when a low one follows: keep the pair as it is.
      if (i + 1 < n) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          continue;
        }
      }
      esc = unicodeEscape(c);
    } else if (c >= 0xdc00 && c <= 0xdfff) esc = unicodeEscape(c);
    if (esc !== null) {
      parts.push(s.substring(start, i));
      parts.push(esc);
      start = i + 1;
    }
  }
  parts.push(s.substring(start, n));
  parts.push('"');
  return parts.join("");
}

function unicodeEscape(c: i32): string {
  return (
    "\\u" +
    HEX.charAt((c >> 12) & 15) +
    HEX.charAt((c >> 8) & 15) +
    HEX.charAt((c >> 4) & 15) +
    HEX.charAt(c & 15)
  );
}

/** A finite number as JSON text: integers without a fraction (1, not 1.0). */
export function numberText(x: f64): string {
  if (!isFinite(x)) return "null";
  if (Math.floor(x) == x && Math.abs(x) < 9007199254740992.0) return (<i64>x).toString();
  return x.toString();
}

/** Builds one JSON object, member by member, in order. */
export class ObjectWriter {
  private parts: string[] = [];

  private key(k: string): void {
    if (this.parts.length > 0) this.parts.push(",");
    this.parts.push(quote(k));
    this.parts.push(":");
  }

  str(k: string, v: string): ObjectWriter {
    this.key(k);
    this.parts.push(quote(v));
    return this;
  }

  num(k: string, v: f64): ObjectWriter {
    this.key(k);
    this.parts.push(numberText(v));
    return this;
  }

  bool(k: string, v: bool): ObjectWriter {
    this.key(k);
    this.parts.push(v ? "true" : "false");
    return this;
  }

  /** A member whose value is already JSON text. */
  raw(k: string, json: string): ObjectWriter {
    this.key(k);
    this.parts.push(json);
    return this;
  }

  toString(): string {
    return "{" + this.parts.join("") + "}";
  }
}
