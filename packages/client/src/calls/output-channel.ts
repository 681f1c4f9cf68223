/**
 * Live output of one connection (DESIGN §5 "Live output", §7): makes each call's {@link CallOutput}
 * — streaming when the server's `welcome` offered `output`, else buffered as before — and hands
 * the server's `credit` to the streaming call it names. Credit for a call that is unknown or no
 * longer streams (answered, ended) is ignored.
 */
import { type CreditMessage, encodeOutputFrame, outputFrameHeaderBytes, outputFrameInPlace, type WelcomeOutput } from '@toolwire/protocol';
import type { Logger } from '../types.js';
import { BufferedOutput, type CallOutput, type OutputStreamName } from './output-sink.js';
import { FRAME_WIRE_BYTES, type OutputLink } from './output-link.js';
import { StreamingOutput } from './streaming-output.js';

/**
 * Most window one call holds at once, bytes (16 MiB): a larger `windowBytes` or credit from the
 * server is used only up to this, so a host's memory per streaming call stays bounded even against
 * a server that grants without bound. Sending less than the server allows is always in order.
 */
export const MAX_WINDOW_BYTES = 16 * 1024 * 1024;

/** Bytes of an `output` frame kept free of data (its header: kind, stream, seq, call id of at most 512 bytes). */
const FRAME_RESERVE_BYTES = 1024;

/**
 * Frame buffers kept for reuse once their frame is written, per connection (each at most 64 KiB of
 * data + the reserve: 8 × 65 KiB). A new buffer per chunk is memory V8 counts as external:
 * at streaming rates it starts a full garbage collection every few dozen MiB.
 */
const POOLED_FRAMES = 8;

/** Sends one encoded frame; `sent` (if given) is called once the connection no longer needs the frame's memory. */
export type FrameSender = (frame: string | Uint8Array, sent?: () => void) => boolean;

/** The calls' outputs of one connection. */
export class OutputChannel implements OutputLink {
  readonly #send: FrameSender;
  /** Frame buffers free for the next chunk (each {@link frameBytes} long). */
  readonly #free: Buffer[] = [];
  readonly #frameBytes: number;
  readonly #offer: WelcomeOutput | undefined;
  readonly #capBytes: number;
  readonly #logger: Logger;
  readonly #streams = new Map<string, StreamingOutput>();
  readonly chunkBytes: number;
  readonly maxWindowBytes = MAX_WINDOW_BYTES;

  /**
   * @param send sends one encoded frame (JSON text or binary) on the connection; false when it is gone.
   *   A sender that calls `sent` once the frame is written lets the channel reuse the frame's buffer.
   * @param offer the server's `welcome.output`; `undefined`: no live output (every call buffered)
   * @param maxPayload the server's `welcome.limits.maxPayload`, bytes
   * @param capBytes the per-stream capture cap, bytes (`captureCapBytes`)
   */
  constructor(send: FrameSender, offer: WelcomeOutput | undefined, maxPayload: number, capBytes: number, logger: Logger) {
    this.#send = send;
    this.#offer = offer;
    this.#capBytes = capBytes;
    this.#logger = logger;
    // A chunk's binary frame (header + bytes) fits `maxPayload`.
    const fit = maxPayload - FRAME_RESERVE_BYTES;
    this.chunkBytes = Math.max(1, Math.min(offer?.maxChunkBytes ?? 1, fit));
    // A call's chunk fills at most one frame of FRAME_WIRE_BYTES (frameDataBytes): no buffer needs more.
    this.#frameBytes = Math.min(this.chunkBytes, FRAME_WIRE_BYTES) + FRAME_RESERVE_BYTES;
  }

  /** Whether calls on this connection stream. */
  get streaming(): boolean {
    return this.#offer !== undefined;
  }

  /** The output of call `id`: streaming (and taking credit until it is taken) or buffered. */
  open(id: string): CallOutput {
    if (this.#offer === undefined) return new BufferedOutput(this.#capBytes);
    const output = new StreamingOutput(id, this, this.#offer.windowBytes, this.#capBytes);
    this.#streams.set(id, output);
    return output;
  }

  /** The server's `credit`: more window for a streaming call; ignored for any other id. */
  credit(message: CreditMessage): void {
    const output = this.#streams.get(message.id);
    if (output === undefined) {
      this.#logger.debug({ id: message.id }, 'toolwire: credit for an unknown or finished call ignored');
      return;
    }
    output.credit(message.bytes);
  }

  send(frame: string | Uint8Array): boolean {
    return this.#send(frame);
  }

  /** One chunk as a binary frame, in a pooled buffer when it fits one (the buffer comes back once the frame is written). */
  sendChunk(id: string, stream: OutputStreamName, seq: number, parts: readonly Uint8Array[], bytes: number): boolean {
    if (outputFrameHeaderBytes(id) + bytes > this.#frameBytes) return this.#send(encodeOutputFrame(id, stream, seq, parts, bytes));
    const buffer = this.frameBuffer();
    return this.#send(encodeOutputFrame(id, stream, seq, parts, bytes, buffer), () => this.recycle(buffer));
  }

  frameBuffer(): Buffer {
    return this.#free.pop() ?? Buffer.allocUnsafeSlow(this.#frameBytes);
  }

  sendInPlace(id: string, stream: OutputStreamName, seq: number, frame: Buffer, start: number, end: number): boolean {
    return this.#send(outputFrameInPlace(id, stream, seq, frame, start, end), () => this.recycle(frame));
  }

  recycle(frame: Buffer): void {
    if (this.#free.length < POOLED_FRAMES && frame.length === this.#frameBytes) this.#free.push(frame);
  }

  forget(id: string, output: StreamingOutput): void {
    if (this.#streams.get(id) === output) this.#streams.delete(id);
  }
}
