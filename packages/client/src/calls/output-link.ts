/**
 * The connection side of a streaming call's output (DESIGN §5 "Live output"): what a
 * {@link StreamingOutput} sends its chunks through ({@link OutputLink}, one per connection:
 * `output-channel.ts`), and how large one chunk's frame is.
 */
import type { OutputStreamName } from './output-sink.js';
import type { StreamingOutput } from './streaming-output.js';

/** What a streaming call needs from its connection (one per connection: `output-channel.ts`). */
export interface OutputLink {
  /** Sends one encoded frame (JSON text, or a binary `output` frame); false when the connection is gone. */
  send(frame: string | Uint8Array): boolean;
  /** Sends one chunk (`parts` in order, `bytes` in all) as a binary `output` frame; false when the connection is gone. */
  sendChunk(id: string, stream: OutputStreamName, seq: number, parts: readonly Uint8Array[], bytes: number): boolean;
  /**
   * A frame buffer for {@link sendInPlace}: room for the largest header (a call id of 512 bytes) and
   * {@link chunkBytes}. Pooled: give it back with {@link recycle} when it is not sent.
   */
  frameBuffer(): Buffer;
  /**
   * Sends `frame[start, end)` as one chunk's binary `output` frame, its header written into the bytes
   * just before `start` (no copy of the data); `frame` goes back to the pool once written. False when the connection is gone.
   */
  sendInPlace(id: string, stream: OutputStreamName, seq: number, frame: Buffer, start: number, end: number): boolean;
  /** Gives back a buffer of {@link frameBuffer} that was not sent. */
  recycle(frame: Buffer): void;
  /**
   * Largest data of one chunk, bytes (the server's `maxChunkBytes`, lowered to fit `maxPayload`); a
   * call's chunks are at most {@link frameDataBytes} of it.
   */
  readonly chunkBytes: number;
  /** Most window a call holds at once, bytes (see `MAX_WINDOW_BYTES`). */
  readonly maxWindowBytes: number;
  /** The call no longer takes credit. */
  forget(id: string, output: StreamingOutput): void;
}

/**
 * Wire size of a full `output` frame, its WebSocket header included: 64 KiB, what Node.js reads from
 * a socket at a time. The server (ws) hands a frame that arrived within one read over as a view of
 * that read; a frame that spans reads it first copies into a new buffer of its own. Frames of exactly
 * one read's size line up with the reads whenever the server reads full buffers (it is behind the
 * host), so the server neither copies them nor allocates for them; a larger frame always spans reads.
 */
export const FRAME_WIRE_BYTES = 64 * 1024;

/** WebSocket header of a masked (client) frame with a 126…65535-byte payload: 2 + 2 (length) + 4 (mask). */
const WS_HEADER_BYTES = 8;

/**
 * Largest data of one chunk of a call whose `output` frame header is `headerBytes`: what fills a
 * {@link FRAME_WIRE_BYTES} frame exactly, or `chunkBytes` (the server's limit) when that is less.
 */
export function frameDataBytes(chunkBytes: number, headerBytes: number): number {
  const aligned = FRAME_WIRE_BYTES - WS_HEADER_BYTES - headerBytes;
  return aligned > 0 && aligned < chunkBytes ? aligned : chunkBytes;
}
