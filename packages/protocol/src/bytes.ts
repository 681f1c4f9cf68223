/**
 * Byte streams on the wire (DESIGN §5): valid UTF-8 travels as text, anything else as base64, so
 * stdout/stderr round-trip exactly.
 */

/** A byte stream as it travels in a `result` frame. */
export interface WireBytes {
  text: string;
  encoding?: 'base64';
}

import { isUtf8 } from 'node:buffer';

const EMPTY = new Uint8Array(0);

/** Encode bytes for the wire: UTF-8 text when valid UTF-8 (`node:buffer` isUtf8), else base64. */
export function toWire(bytes: Uint8Array): WireBytes {
  if (bytes.length === 0) return { text: '' };
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return { text: buf.toString('utf8') };
  return { text: buf.toString('base64'), encoding: 'base64' };
}

/** Decode a wire stream back to bytes. */
export function fromWire(text: string, encoding?: 'base64'): Uint8Array {
  if (text.length === 0) return EMPTY;
  if (encoding === 'base64') return Buffer.from(text, 'base64');
  // All-ASCII text (its UTF-8 length is its length) is copied as Latin-1, the same bytes: the length
  // check and the Latin-1 copy are cheaper than the UTF-8 encoder (bench/README.md item 21).
  return Buffer.byteLength(text, 'utf8') === text.length ? Buffer.from(text, 'latin1') : Buffer.from(text, 'utf8');
}

/** UTF-8 encode a string (shared encoder; no per-call allocation of encoders). */
export function utf8(text: string): Uint8Array {
  return text.length === 0 ? EMPTY : Buffer.from(text, 'utf8');
}
