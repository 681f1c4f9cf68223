/**
 * The binary `output` frame (protocol 2, DESIGN §5 "Live output"): one chunk of a running call's
 * stdout or stderr as a WebSocket binary frame — a small fixed header and the raw bytes, so a chunk
 * crosses with no text encoding, no escaping and no schema check of its data.
 *
 * Layout (big-endian):
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 1 | kind: `0x01` (output) |
 * | 1 | 1 | stream: `1` stdout, `2` stderr (the file descriptors) |
 * | 2 | 6 | `seq`, unsigned 48-bit integer |
 * | 8 | 2 | `n`: byte length of the call id (UTF-8) |
 * | 10 | n | the call id (1–128 characters) |
 * | 10 + n | rest | the chunk's bytes (at least one) |
 *
 * The same chunk as a JSON `output` text frame (`data`, `encoding?`) is accepted too; a tool host sends
 * the binary form. A protocol-1 connection never carries a binary frame (close 1003, as before).
 */
import { CloseCode } from './codes.js';
import type { Decoded, WireError } from './codec.js';

/** One decoded `output` chunk, whichever frame carried it. `bytes` is a view of the frame (not copied). */
export interface OutputFrame {
  id: string;
  stream: 'stdout' | 'stderr';
  seq: number;
  bytes: Uint8Array;
}

/** First byte of a binary `output` frame. */
export const OUTPUT_FRAME_KIND = 0x01;

/** Bytes of the fixed header before the call id. */
const FIXED_HEADER_BYTES = 10;

/** Largest `seq` a binary frame carries (2^48 − 1). */
export const MAX_OUTPUT_FRAME_SEQ = 2 ** 48 - 1;

/** Longest call id, characters (as the JSON schema's `id`). */
const MAX_ID_CHARS = 128;

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Bytes of a binary `output` frame's header for call id `id` (before the data). */
export function outputFrameHeaderBytes(id: string): number {
  return FIXED_HEADER_BYTES + Buffer.byteLength(id, 'utf8');
}

/**
 * Encode one chunk as a binary `output` frame: the header, then `parts` in order (`bytes` in all,
 * at least 1), copied once into one buffer — a new one that owns its memory (so keeping the frame
 * keeps nothing else alive), or the start of `into` (then the frame is a view of it; `into` must
 * hold {@link outputFrameHeaderBytes} + `bytes`). Throws `RangeError` for an empty chunk, a `seq`
 * out of range, an id of the wrong length or an `into` too small (caller misuse: the tool host mints
 * none of them from peer input).
 */
export function encodeOutputFrame(id: string, stream: 'stdout' | 'stderr', seq: number, parts: readonly Uint8Array[], bytes: number, into?: Buffer): Buffer {
  if (bytes < 1) throw new RangeError('an output chunk holds at least one byte');
  const header = outputFrameHeaderBytes(id);
  if (into !== undefined && into.length < header + bytes) throw new RangeError(`output frame of ${header + bytes} bytes does not fit ${into.length}`);
  const frame = into === undefined ? Buffer.allocUnsafeSlow(header + bytes) : into.subarray(0, header + bytes);
  writeHeader(frame, id, stream, seq, header);
  let at = header;
  for (const part of parts) {
    frame.set(part, at);
    at += part.length;
  }
  if (at !== header + bytes) throw new RangeError(`output parts hold ${at - header} bytes, not ${bytes}`);
  return frame;
}

/**
 * Make the bytes `frame[start, end)` a binary `output` frame in place: its header is written into the
 * {@link outputFrameHeaderBytes} bytes before `start` (they must be free), and the frame is returned
 * as a view of `frame` — the chunk's bytes are not copied. Throws `RangeError` as {@link encodeOutputFrame}
 * does, and when the header does not fit before `start`.
 */
export function outputFrameInPlace(id: string, stream: 'stdout' | 'stderr', seq: number, frame: Buffer, start: number, end: number): Buffer {
  if (end - start < 1) throw new RangeError('an output chunk holds at least one byte');
  const header = outputFrameHeaderBytes(id);
  if (start < header || end > frame.length) throw new RangeError(`output frame [${start - header}, ${end}) does not fit ${frame.length} bytes`);
  const view = frame.subarray(start - header, end);
  writeHeader(view, id, stream, seq, header);
  return view;
}

/** Write the header (`header` bytes, {@link outputFrameHeaderBytes}) at the start of `frame`. */
function writeHeader(frame: Buffer, id: string, stream: 'stdout' | 'stderr', seq: number, header: number): void {
  if (!Number.isInteger(seq) || seq < 0 || seq > MAX_OUTPUT_FRAME_SEQ) throw new RangeError(`output seq ${seq} out of range`);
  if (id.length === 0 || id.length > MAX_ID_CHARS) throw new RangeError(`call id of ${id.length} characters (1–${MAX_ID_CHARS})`);
  frame[0] = OUTPUT_FRAME_KIND;
  frame[1] = stream === 'stdout' ? 1 : 2;
  frame.writeUIntBE(seq, 2, 6);
  frame.writeUInt16BE(header - FIXED_HEADER_BYTES, 8);
  frame.write(id, FIXED_HEADER_BYTES, 'utf8');
}

function refused(reason: string, id?: string): Decoded<OutputFrame> {
  const error: WireError = { fatal: false, closeCode: CloseCode.PROTOCOL_ERROR, reason: `binary output frame: ${reason}`, type: 'output' };
  if (id !== undefined) error.id = id;
  return { ok: false, error };
}

/**
 * Decode a binary `output` frame. Never throws. A frame that is not one (too short, another kind, a
 * call id that is not 1–128 characters of UTF-8) is a wrong-shape frame naming no call; a bad
 * stream or an empty chunk names its call (which then settles 76). Window, order and size checks
 * are the session's.
 */
export function decodeOutputFrame(frame: Buffer): Decoded<OutputFrame> {
  if (frame.length < FIXED_HEADER_BYTES) return refused(`${frame.length} bytes, shorter than its header`);
  if (frame[0] !== OUTPUT_FRAME_KIND) return refused(`unknown kind ${frame[0]!}`);
  const idBytes = frame.readUInt16BE(8);
  if (idBytes === 0 || FIXED_HEADER_BYTES + idBytes > frame.length) return refused(`call id of ${idBytes} bytes does not fit`);
  let id: string;
  try {
    id = decoder.decode(frame.subarray(FIXED_HEADER_BYTES, FIXED_HEADER_BYTES + idBytes));
  } catch {
    return refused('call id is not UTF-8');
  }
  if (id.length > MAX_ID_CHARS) return refused(`call id of ${id.length} characters (at most ${MAX_ID_CHARS})`);
  const code = frame[1];
  if (code !== 1 && code !== 2) return refused(`unknown stream ${code!}`, id);
  const start = FIXED_HEADER_BYTES + idBytes;
  if (start === frame.length) return refused('empty chunk', id);
  return { ok: true, message: { id, stream: code === 1 ? 'stdout' : 'stderr', seq: frame.readUIntBE(2, 6), bytes: frame.subarray(start) } };
}
