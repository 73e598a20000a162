// Standard base64 (RFC 4648 §4) decoding, as the platform gives webhook bodies (`bodyBase64`).

function sextet(c: i32): i32 {
  if (c >= 0x41 && c <= 0x5a) return c - 0x41; // A-Z
  if (c >= 0x61 && c <= 0x7a) return c - 0x61 + 26; // a-z
  if (c >= 0x30 && c <= 0x39) return c - 0x30 + 52; // 0-9
  if (c == 0x2b) return 62; // +
  if (c == 0x2f) return 63; // /
  return -1;
}

/** The bytes that `text` encodes, or null when it is not base64. Padding is optional. */
export function decodeBase64(text: string): Uint8Array | null {
  let n = text.length;
  // Strip up to two "=" of padding; then the rest must be alphabet characters.
  let pad = 0;
  while (n > 0 && pad < 2 && text.charCodeAt(n - 1) == 0x3d) {
    n--;
    pad++;
  }
  if (pad > 0 && (n + pad) % 4 != 0) return null;
  if (n % 4 == 1) return null;
  const out = new Uint8Array((n * 3) >> 2);
  let acc: u32 = 0;
  let bits: u32 = 0;
  let j = 0;
  for (let i = 0; i < n; i++) {
    const v = sextet(text.charCodeAt(i));
    if (v < 0) return null;
    acc = (acc << 6) | <u32>v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = <u8>((acc >> bits) & 0xff);
    }
  }
  return out;
}
