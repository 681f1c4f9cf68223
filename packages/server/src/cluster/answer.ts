/**
 * A call's answers from the host's node to the caller's node (DESIGN §10), binary: a one-byte kind,
 * a small fixed header and the raw bytes — no JSON, no base64 (as the binary `output` frame does
 * between a tool host and its server). A capture that fits one NATS message is one `end` message;
 * a larger one goes as `part` messages then an `end`.
 *
 * Layouts (big-endian):
 *
 * | kind | layout |
 * |---|---|
 * | `0x01` output | kind, stream (1 stdout, 2 stderr), `seq` (u48), the chunk's bytes |
 * | `0x02` part | kind, section (1 stdout, 2 stderr, 3 meta), bytes to append to that section |
 * | `0x03` end | kind, exit code (i32), then the u32 lengths of stdout, stderr and meta, then those bytes |
 *
 * `meta` is the JSON of the capture's other fields (`failure`, `content`, `structured`), empty when
 * it has none. The receiver appends each section's `part`s, then the `end`'s own bytes, in order.
 */
import { type Capture, FailureKind, type Failure } from '@toolwire/protocol';

export const ANSWER_OUTPUT = 0x01;
export const ANSWER_PART = 0x02;
export const ANSWER_END = 0x03;

/** Bytes of an `end` message before its data. */
const END_HEADER = 17;
/** Bytes of a `part` message before its data. */
const PART_HEADER = 2;

/** The sections of a capture an answer carries. */
export type Section = 'stdout' | 'stderr' | 'meta';
const SECTIONS: readonly Section[] = ['stdout', 'stderr', 'meta'];

/** One decoded answer; byte fields are views of the message (copy what is kept). */
export type Answer =
  | { t: 'output'; stream: 'stdout' | 'stderr'; seq: number; bytes: Uint8Array }
  | { t: 'part'; section: Section; bytes: Uint8Array }
  | { t: 'end'; exitCode: number; stdout: Uint8Array; stderr: Uint8Array; meta: Uint8Array };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An `output` answer: one live-output chunk. */
export function encodeOutput(stream: 'stdout' | 'stderr', seq: number, bytes: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(8 + bytes.length);
  out[0] = ANSWER_OUTPUT;
  out[1] = stream === 'stderr' ? 2 : 1;
  out.writeUIntBE(seq, 2, 6);
  out.set(bytes, 8);
  return out;
}

/**
 * The messages that answer `capture`, each at most `maxPayload` bytes: one `end` when it fits,
 * else `part`s of each section and an empty `end`.
 */
export function encodeCapture(capture: Capture, maxPayload: number): Uint8Array[] {
  const meta = metaOf(capture);
  const data = { stdout: capture.stdout, stderr: capture.stderr, meta };
  if (END_HEADER + data.stdout.length + data.stderr.length + meta.length <= maxPayload) return [end(capture.exitCode, data)];
  const out: Uint8Array[] = [];
  const room = Math.max(1, maxPayload - PART_HEADER);
  SECTIONS.forEach((section, k) => {
    const bytes = data[section];
    for (let at = 0; at < bytes.length; at += room) {
      const piece = bytes.subarray(at, at + room);
      const part = Buffer.allocUnsafe(PART_HEADER + piece.length);
      part[0] = ANSWER_PART;
      part[1] = k + 1;
      part.set(piece, PART_HEADER);
      out.push(part);
    }
  });
  const empty = new Uint8Array(0);
  out.push(end(capture.exitCode, { stdout: empty, stderr: empty, meta: empty }));
  return out;
}

function end(exitCode: number, data: Record<Section, Uint8Array>): Uint8Array {
  const out = Buffer.allocUnsafe(END_HEADER + data.stdout.length + data.stderr.length + data.meta.length);
  out[0] = ANSWER_END;
  out.writeInt32BE(exitCode | 0, 1);
  let at = END_HEADER;
  SECTIONS.forEach((section, k) => {
    out.writeUInt32BE(data[section].length, 5 + 4 * k);
    out.set(data[section], at);
    at += data[section].length;
  });
  return out;
}

/** The JSON of the capture's fields other than the streams and the exit code (empty when none). */
function metaOf(capture: Capture): Uint8Array {
  if (capture.failure === undefined && capture.content === undefined && capture.structured === undefined) return new Uint8Array(0);
  const meta: Record<string, unknown> = {};
  if (capture.failure !== undefined) meta.failure = capture.failure;
  if (capture.content !== undefined) meta.content = capture.content;
  if (capture.structured !== undefined) meta.structured = capture.structured;
  return encoder.encode(JSON.stringify(meta));
}

/** Decode one answer, or `undefined` when it is malformed. */
export function decodeAnswer(data: Uint8Array): Answer | undefined {
  if (data.length < 2) return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  switch (data[0]) {
    case ANSWER_OUTPUT:
      if (data.length < 8 || (data[1] !== 1 && data[1] !== 2)) return undefined;
      return { t: 'output', stream: data[1] === 2 ? 'stderr' : 'stdout', seq: view.readUIntBE(2, 6), bytes: data.subarray(8) };
    case ANSWER_PART: {
      const section = SECTIONS[data[1]! - 1];
      return section === undefined ? undefined : { t: 'part', section, bytes: data.subarray(PART_HEADER) };
    }
    case ANSWER_END: {
      if (data.length < END_HEADER) return undefined;
      const n = [view.readUInt32BE(5), view.readUInt32BE(9), view.readUInt32BE(13)] as const;
      if (END_HEADER + n[0] + n[1] + n[2] !== data.length) return undefined;
      const a = END_HEADER + n[0];
      const b = a + n[1];
      return { t: 'end', exitCode: view.readInt32BE(1), stdout: data.subarray(END_HEADER, a), stderr: data.subarray(a, b), meta: data.subarray(b) };
    }
    default:
      return undefined;
  }
}

/** The capture fields in `meta` (see {@link encodeCapture}); `undefined` when it does not parse. */
export function decodeMeta(meta: Uint8Array): Pick<Capture, 'failure' | 'content' | 'structured'> | undefined {
  if (meta.length === 0) return {};
  try {
    const value: unknown = JSON.parse(decoder.decode(meta));
    if (typeof value !== 'object' || value === null) return undefined;
    const { failure, content, structured } = value as Record<string, unknown>;
    const out: Pick<Capture, 'failure' | 'content' | 'structured'> = {};
    if (typeof failure === 'string' && Object.hasOwn(FailureKind, failure)) out.failure = failure as Failure;
    if (Array.isArray(content)) out.content = content as NonNullable<Capture['content']>;
    if (typeof structured === 'object' && structured !== null) out.structured = structured as Record<string, unknown>;
    return out;
  } catch {
    return undefined;
  }
}
