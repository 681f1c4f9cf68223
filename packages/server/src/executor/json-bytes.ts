/**
 * A JSON string literal built from UTF-8 bytes without decoding them (the disk record's
 * `output.json` of a big capture): for valid UTF-8 the result is exactly the UTF-8 encoding of
 * `JSON.stringify(bytes.toString('utf8'))`.
 *
 * `JSON.stringify` escapes `"` and `\` with a backslash, `\b \f \n \r \t` in their short forms and
 * every other code point below U+0020 as `\u00xx` (lowercase hex); everything else it leaves as it
 * is, except lone surrogates, which valid UTF-8 cannot hold. Each of those code points is one byte
 * below 0x80 in UTF-8, and no byte of a multi-byte sequence is below 0x80, so escaping byte by byte
 * gives the same bytes. Decoding a capture to a string and escaping it in `JSON.stringify` costs
 * several times more (and makes two strings of the capture's size).
 */

/** Per byte value: the length of its escape minus 1 (0: written as it is). */
const EXTRA = new Uint8Array(256);
/** Per byte value: the character after the backslash of its short escape, or 0 (`\u00xx`). */
const SHORT = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) EXTRA[b] = 5;
for (const [b, c] of [
  [0x08, 'b'],
  [0x09, 't'],
  [0x0a, 'n'],
  [0x0c, 'f'],
  [0x0d, 'r'],
  [0x22, '"'],
  [0x5c, '\\'],
] as const) {
  EXTRA[b] = 1;
  SHORT[b] = c.charCodeAt(0);
}
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Bytes of the JSON string literal of `bytes` (quotes included); `bytes` must be valid UTF-8. */
export function jsonStringLength(bytes: Uint8Array): number {
  let n = bytes.length + 2;
  for (let i = 0; i < bytes.length; i++) n += EXTRA[bytes[i]!]!;
  return n;
}

/**
 * Write the JSON string literal of `bytes` (quotes included; valid UTF-8) into `out` at `offset`;
 * returns the offset after it. `out` must have {@link jsonStringLength} bytes free there.
 */
export function writeJsonString(bytes: Uint8Array, out: Uint8Array, offset: number): number {
  let o = offset;
  out[o++] = QUOTE;
  // A plain byte loop: a native copy per run between escapes costs more for log text (a newline every few dozen bytes).
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (EXTRA[b] === 0) {
      out[o++] = b;
      continue;
    }
    out[o++] = BACKSLASH;
    const short = SHORT[b]!;
    if (short !== 0) {
      out[o++] = short;
      continue;
    }
    out[o++] = 0x75; // u
    out[o++] = 0x30; // 0
    out[o++] = 0x30;
    out[o++] = HEX[b >> 4]!;
    out[o++] = HEX[b & 15]!;
  }
  out[o++] = QUOTE;
  return o;
}
