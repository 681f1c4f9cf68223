/**
 * Live output of one pending call (protocol 2, DESIGN §5 "Live output"): the bookkeeping the server
 * keeps for a call from its first `output` chunk until it settles.
 *
 * - Order: each chunk's `seq` must be the next one (0, 1, 2, … over both streams).
 * - Flow control: the call may have sent at most `windowBytes` plus every credit the server sent
 *   (decoded bytes); a chunk holds at most `maxChunkBytes`. Bytes become credit once the consumer
 *   has taken them (returned, or its promise settled); a `credit` frame goes out per half window.
 * - Capture: each stream is kept head + tail (the same cap and marker as the host's, so the capture
 *   is byte-identical whether or not the call streamed): the chunks in `seq` order, then the
 *   result's remainder ({@link KeptStream}). `result.streamed` must match what arrived.
 *
 * A fault is returned as a reason (the session then settles the call 76); nothing here throws for
 * anything a host sends, and the consumer is never called after {@link OutputStream.end}.
 */
import { type Capture, encodeMessage, type OutputFrame, type ResultMessage } from '@toolwire/protocol';
import type { Logger } from '../options.js';
import type { OutputListener } from '../seam.js';
import { KeptStream } from './kept-output.js';

/**
 * Bytes of a `result` frame the tool host keeps free of stream data (DESIGN §7). The same constant
 * as the host's `RESULT_RESERVE_BYTES`: the server's cap of a streamed capture must be the host's.
 */
const RESULT_RESERVE_BYTES = 16 * 1024;

/**
 * The per-stream capture cap, as the tool host computes it (DESIGN §7): the smaller of
 * `maxCaptureBytes` and `floor((maxPayload − 16 KiB) · 3 / 8)` (6285312 bytes for the defaults).
 */
export function captureCapBytes(maxPayload: number, maxCaptureBytes: number): number {
  const share = Math.floor((Math.max(0, maxPayload - RESULT_RESERVE_BYTES) * 3) / 8);
  return Math.max(0, Math.min(maxCaptureBytes, share));
}

/** What a session offers in `welcome.output`, and the capture cap. Sizes in bytes. */
export interface OutputSettings {
  /** Window of each call before its first credit (`outputWindowBytes`). */
  windowBytes: number;
  /** Largest chunk, decoded (`outputChunkBytes`). */
  maxChunkBytes: number;
  /** Per-stream capture cap, head + tail ({@link captureCapBytes}). */
  capBytes: number;
}

/** The two streams of a capture so far (capped). */
export interface StreamedPart {
  stdout: Uint8Array;
  stderr: Uint8Array;
}

/** One streaming call's order, window, byte counts, capture and consumer. */
export class OutputStream {
  readonly #id: string;
  readonly #listener: OutputListener | undefined;
  readonly #sendText: (text: string) => void;
  readonly #logger: Logger;
  readonly #maxChunk: number;
  readonly #creditAt: number;
  readonly #stdout: KeptStream;
  readonly #stderr: KeptStream;
  /** The next `seq` (wire chunks, then the remainder and reason line handed to the consumer). */
  #seq = 0;
  /** Bytes of the chunks received, per stream (what `result.streamed` must say). */
  #stdoutBytes = 0;
  #stderrBytes = 0;
  /** Bytes the host may have sent in all: the window plus every credit sent. */
  #granted: number;
  /** Bytes passed on to the consumer and not yet credited. */
  #passed = 0;
  /** False once the result arrived or the call settled: no more `credit`. */
  #crediting = true;
  #ended = false;
  #listenerFailed = false;
  #part: StreamedPart | undefined;

  /**
   * @param id the call's wire id (of `credit` frames and log lines)
   * @param listener the call's consumer (`RoutedCall.onOutput`), if any
   * @param sendText sends one text frame to the host
   */
  /** Output bytes received so far, both streams (for the status page). */
  get received(): number {
    return this.#stdoutBytes + this.#stderrBytes;
  }

  constructor(id: string, settings: OutputSettings, listener: OutputListener | undefined, sendText: (text: string) => void, logger: Logger) {
    this.#id = id;
    this.#listener = listener;
    this.#sendText = sendText;
    this.#logger = logger;
    this.#maxChunk = settings.maxChunkBytes;
    this.#granted = settings.windowBytes;
    this.#creditAt = Math.max(1, Math.floor(settings.windowBytes / 2));
    this.#stdout = new KeptStream(settings.capBytes);
    this.#stderr = new KeptStream(settings.capBytes);
  }

  /** Take one `output` chunk (binary or JSON frame, decoded); `undefined` when taken, else why it breaks the protocol. */
  take(message: OutputFrame): string | undefined {
    if (message.seq !== this.#seq) return `output seq ${message.seq} out of order (expected ${this.#seq})`;
    const bytes = message.bytes;
    if (bytes.length > this.#maxChunk) return `output chunk of ${bytes.length} bytes (maxChunkBytes ${this.#maxChunk})`;
    const sent = this.#stdoutBytes + this.#stderrBytes + bytes.length;
    if (sent > this.#granted) return `output past the window: ${sent} bytes sent, ${this.#granted} granted`;
    if (message.stream === 'stdout') this.#stdoutBytes += bytes.length;
    else this.#stderrBytes += bytes.length;
    this.#push(message.stream, bytes);
    return undefined;
  }

  /**
   * The call's `result` arrived: check `result.streamed` against what arrived, then take the bytes
   * the result still carries. `undefined` when they agree, else why not.
   */
  finish(result: ResultMessage, stdout: Uint8Array, stderr: Uint8Array): string | undefined {
    const s = result.streamed;
    const chunks = this.#seq;
    if (s === undefined || s.stdout !== this.#stdoutBytes || s.stderr !== this.#stderrBytes || s.chunks !== chunks) {
      const said = s === undefined ? 'nothing' : JSON.stringify(s);
      return `result.streamed says ${said}, but ${JSON.stringify({ stdout: this.#stdoutBytes, stderr: this.#stderrBytes, chunks })} arrived`;
    }
    this.#crediting = false; // the host sends nothing more for this call
    if (stdout.length > 0) this.#push('stdout', stdout);
    if (stderr.length > 0) this.#push('stderr', stderr);
    return undefined;
  }

  /** Each stream so far, capped (head + marker + tail). */
  part(): StreamedPart {
    this.#part ??= { stdout: this.#stdout.bytes('stdout'), stderr: this.#stderr.bytes('stderr') };
    return this.#part;
  }

  /**
   * The call settles with `capture` (built on {@link part}): hand the consumer what the capture adds
   * after the streamed part (toolwire's `toolwire: <reason>` line), then stop: no more consumer calls
   * and no more credit.
   */
  end(capture: Capture): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#crediting = false;
    const part = this.part();
    if (capture.stdout.length > part.stdout.length) this.#deliver('stdout', capture.stdout.subarray(part.stdout.length));
    if (capture.stderr.length > part.stderr.length) this.#deliver('stderr', capture.stderr.subarray(part.stderr.length));
  }

  #push(stream: 'stdout' | 'stderr', bytes: Uint8Array): void {
    (stream === 'stdout' ? this.#stdout : this.#stderr).push(bytes);
    this.#part = undefined;
    this.#deliver(stream, bytes);
  }

  /** Hand `bytes` to the consumer (in order, next `seq`); credit them once it has taken them. */
  #deliver(stream: 'stdout' | 'stderr', bytes: Uint8Array): void {
    const seq = this.#seq++;
    const listener = this.#listener;
    if (listener === undefined) return this.#credit(bytes.length);
    let taken: void | Promise<void>;
    try {
      taken = listener({ stream, bytes, seq });
    } catch (error) {
      this.#failed(error);
      return this.#credit(bytes.length);
    }
    if (taken === undefined || typeof (taken as Partial<Promise<void>>).then !== 'function') return this.#credit(bytes.length);
    Promise.resolve(taken).then(
      () => this.#credit(bytes.length),
      (error: unknown) => {
        this.#failed(error);
        this.#credit(bytes.length);
      },
    );
  }

  /** `n` bytes were passed on: send `credit` once half a window has been. */
  #credit(n: number): void {
    if (!this.#crediting) return;
    this.#passed += n;
    if (this.#passed < this.#creditAt) return;
    const bytes = this.#passed;
    this.#passed = 0;
    this.#granted += bytes;
    this.#sendText(encodeMessage({ type: 'credit', id: this.#id, bytes }));
  }

  #failed(error: unknown): void {
    // Logged once per call: a consumer that throws on every chunk must not flood the log.
    if (this.#listenerFailed) return;
    this.#listenerFailed = true;
    this.#logger.warn({ id: this.#id, err: error }, 'output consumer threw; the call goes on');
  }
}
