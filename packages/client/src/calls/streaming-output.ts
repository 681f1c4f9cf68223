/**
 * A call's output as `output` chunks within its credit window (protocol 2, DESIGN §5 "Live output").
 *
 * - Order: chunks go out in the order written, `seq` 0, 1, 2, … over both streams. Writes are
 *   gathered until the end of the event-loop turn (`setImmediate`): consecutive bytes of one stream
 *   leave as one chunk (at most `maxChunkBytes`), and a call that ends within the turn it wrote
 *   in (a short tool) sends no chunk at all: its bytes ride in the `result`, as without streaming.
 * - Window: the call starts with `windowBytes`; a chunk uses up its bytes, the server's `credit`
 *   adds. Bytes the window cannot take wait here; a pipe source is told, through its
 *   {@link ReadGate}, exactly the window the server granted, so it stops reading once that is used
 *   up and at most one pipe read per stream waits here. Memory per call: the window (bytes sent
 *   and not yet credited, in the socket's buffers) plus that read.
 * - End: {@link StreamingOutput.end} (stop, deadline, lost connection) sends what the window takes
 *   and keeps the rest, and everything written later, head + tail within the capture cap for the
 *   `result`; nothing waits for credit any more. {@link StreamingOutput.take} does the same and
 *   closes. What the result carries is never sent twice.
 */
import { encodeMessage, type HeadTailBuffer, outputFrameHeaderBytes } from '@toolwire/protocol';
import { type OutputLink, frameDataBytes } from './output-link.js';
import { BaseOutput, type OutputStreamName, type ReadGate, type StreamedCounts, WRITABLE } from './output-sink.js';

/** Minimum time between two `progress` frames of one call, ms (latest message wins). */
export const PROGRESS_INTERVAL_MS = 100;

interface Piece {
  stream: OutputStreamName;
  bytes: Uint8Array;
  /**
   * Set when the bytes were copied in ({@link StreamingOutput.copy}): the pooled frame buffer they lie
   * in, from offset `start` (at least the frame header's length: the header goes just before them).
   */
  frame?: Buffer;
  start?: number;
}

/** One streaming call's chunks, window and remainder. */
export class StreamingOutput extends BaseOutput {
  readonly streaming = true;
  readonly #id: string;
  readonly #link: OutputLink;
  /** Bytes of this call's `output` frame header: where copied-in bytes start in their frame buffer. */
  readonly #header: number;
  /** Bytes the window can still take. */
  #window: number;
  /** Bytes a pipe source may still read (the window granted so far, less what it wrote). */
  #allowance: number;
  #gate: ReadGate | undefined;
  /** Written, not sent yet, in order. */
  readonly #pending: Piece[] = [];
  #pendingBytes = 0;
  #flushing: NodeJS.Immediate | undefined;
  #seq = 0;
  #sentStdout = 0;
  #sentStderr = 0;
  #ending = false;
  /** What the result will carry (made at the first byte that cannot be sent). */
  #rest: { stdout: HeadTailBuffer; stderr: HeadTailBuffer } | undefined;
  /** Largest data of one of this call's chunks ({@link frameDataBytes}). */
  readonly #chunkBytes: number;
  #waiting: { promise: Promise<void>; resolve: () => void } | undefined;
  #progressAt = 0;
  #progressTimer: NodeJS.Timeout | undefined;
  #progressNext: { message?: string } | undefined;

  /** @param windowBytes the call's first window (`welcome.output.windowBytes`), @param capBytes the capture cap per stream */
  constructor(id: string, link: OutputLink, windowBytes: number, capBytes: number) {
    super(capBytes);
    this.#id = id;
    this.#link = link;
    this.#header = outputFrameHeaderBytes(id);
    this.#chunkBytes = frameDataBytes(link.chunkBytes, this.#header);
    this.#window = Math.min(windowBytes, link.maxWindowBytes);
    this.#allowance = this.#window;
  }

  get streamed(): StreamedCounts | undefined {
    return this.#seq === 0 ? undefined : { stdout: this.#sentStdout, stderr: this.#sentStderr, chunks: this.#seq };
  }

  get allowance(): number {
    return this.#ending ? Number.POSITIVE_INFINITY : this.#allowance;
  }

  get held(): boolean {
    return !this.#ending && !this.closed && this.#allowance <= 0;
  }

  get blocked(): boolean {
    return !this.#ending && !this.closed && this.#pendingBytes > this.#window;
  }

  write(stream: OutputStreamName, bytes: Uint8Array): Promise<void> {
    if (this.closed || bytes.length === 0) return WRITABLE;
    if (stream === 'stderr') this.lastStderr = bytes[bytes.length - 1]!;
    this.#allowance -= bytes.length;
    if (this.#ending) {
      this.#keep(stream, bytes);
      return WRITABLE;
    }
    this.#pending.push({ stream, bytes });
    this.#pendingBytes += bytes.length;
    if (this.#window > 0) this.#flushing ??= setImmediate(this.#flush);
    if (this.#pendingBytes <= this.#window) return WRITABLE;
    this.#waiting ??= withResolvers();
    return this.#waiting.promise;
  }

  /**
   * Pipe reads: the bytes are copied into the pooled frame buffer their chunk will leave in (its
   * header is written in front of them when it goes), so a read costs one copy and no new buffer.
   * Consecutive reads of one stream fill one frame up to a chunk.
   */
  copy(stream: OutputStreamName, bytes: Uint8Array): void {
    if (this.closed || bytes.length === 0) return;
    if (stream === 'stderr') this.lastStderr = bytes[bytes.length - 1]!;
    this.#allowance -= bytes.length;
    if (this.#ending) {
      this.#keep(stream, new Uint8Array(bytes));
      return;
    }
    const limit = this.#header + this.#chunkBytes; // where a frame's data ends at most
    let at = 0;
    while (at < bytes.length) {
      const last = this.#pending[this.#pending.length - 1];
      let piece: Piece & { frame: Buffer; start: number };
      if (last?.frame !== undefined && last.stream === stream && last.start! + last.bytes.length < limit) piece = last as typeof piece;
      else {
        const frame = this.#link.frameBuffer();
        piece = { stream, bytes: frame.subarray(this.#header, this.#header), frame, start: this.#header };
        this.#pending.push(piece);
      }
      const end = piece.start + piece.bytes.length;
      const take = Math.min(limit - end, bytes.length - at);
      piece.frame.set(take === bytes.length ? bytes : bytes.subarray(at, at + take), end);
      piece.bytes = piece.frame.subarray(piece.start, end + take);
      at += take;
    }
    this.#pendingBytes += bytes.length;
    if (this.#window > 0) this.#flushing ??= setImmediate(this.#flush);
  }

  progress(message?: string): void {
    if (this.closed || this.#ending) return;
    const next: { message?: string } = {};
    if (message !== undefined) next.message = progressText(message);
    this.#progressNext = next;
    const wait = this.#progressAt + PROGRESS_INTERVAL_MS - performance.now();
    if (wait <= 0) this.#sendProgress();
    else this.#progressTimer ??= setTimeout(this.#sendProgress, wait);
  }

  gate(gate: ReadGate): void {
    this.#gate = gate;
  }

  /** The server's `credit` for this call: `bytes` more window; a held pipe source may read them. */
  credit(bytes: number): void {
    if (this.closed || this.#ending) return;
    this.#window = Math.min(this.#window + bytes, this.#link.maxWindowBytes);
    const before = this.#allowance;
    this.#allowance = Math.max(before, Math.min(before + bytes, this.#link.maxWindowBytes));
    this.#flush();
    if (this.#allowance > before) this.#gate?.allow(this.#allowance - before);
  }

  end(): void {
    if (this.closed || this.#ending) return;
    this.#flush();
    this.#ending = true;
    this.#spill();
    this.#release();
    this.#gate?.allow(Number.POSITIVE_INFINITY);
  }

  protected seal(): { stdout: HeadTailBuffer; stderr: HeadTailBuffer } {
    if (!this.closed) {
      this.#ending = true;
      this.#spill();
      this.closed = true;
      this.#release();
      clearImmediate(this.#flushing);
      this.#flushing = undefined;
      clearTimeout(this.#progressTimer);
      this.#progressTimer = undefined;
      this.#link.forget(this.#id, this);
    }
    return this.#rest ?? (this.#rest = { stdout: this.newBuffer(), stderr: this.newBuffer() });
  }

  /** Send what the window takes, in order, consecutive bytes of a stream as one chunk. */
  readonly #flush = (): void => {
    clearImmediate(this.#flushing);
    this.#flushing = undefined;
    const limit = this.#chunkBytes;
    while (this.#pending.length > 0 && this.#window > 0 && !this.closed) {
      const first = this.#pending[0]!;
      const stream = first.stream;
      const size = Math.min(limit, this.#window);
      if (first.frame !== undefined && first.bytes.length <= size) {
        // Copied in: the chunk leaves from its own frame buffer, the header written in front of it.
        this.#pending.shift();
        const n = first.bytes.length;
        this.#pendingBytes -= n;
        this.#window -= n;
        this.#count(stream, n);
        this.#link.sendInPlace(this.#id, stream, this.#seq++, first.frame, first.start!, first.start! + n);
        continue;
      }
      const parts: Uint8Array[] = [];
      const spent: Buffer[] = [];
      let n = 0;
      while (n < size && this.#pending.length > 0 && this.#pending[0]!.stream === stream) {
        const piece = this.#pending[0]!;
        const take = Math.min(size - n, piece.bytes.length);
        if (take === piece.bytes.length) {
          this.#pending.shift();
          if (piece.frame !== undefined) spent.push(piece.frame);
        } else {
          parts.push(piece.bytes.subarray(0, take));
          piece.bytes = piece.bytes.subarray(take);
          if (piece.start !== undefined) piece.start += take;
          n += take;
          break;
        }
        parts.push(piece.bytes);
        n += take;
      }
      this.#pendingBytes -= n;
      this.#window -= n;
      this.#sendChunk(stream, parts, n);
      for (const frame of spent) this.#link.recycle(frame); // copied into the chunk's frame
    }
    if (this.#waiting !== undefined && this.#pendingBytes <= this.#window) this.#release();
  };

  /** One chunk of `bytes` (the `parts` in order) as a binary `output` frame: the parts are copied once, into the frame. */
  #sendChunk(stream: OutputStreamName, parts: Uint8Array[], bytes: number): void {
    this.#count(stream, bytes);
    this.#link.sendChunk(this.#id, stream, this.#seq++, parts, bytes);
  }

  #count(stream: OutputStreamName, bytes: number): void {
    if (stream === 'stdout') this.#sentStdout += bytes;
    else this.#sentStderr += bytes;
  }

  /** Move what waits into the remainder (the call ends: no more chunks for it). */
  #spill(): void {
    for (const piece of this.#pending) this.#keep(piece.stream, piece.bytes);
    this.#pending.length = 0;
    this.#pendingBytes = 0;
  }

  #keep(stream: OutputStreamName, bytes: Uint8Array): void {
    this.#rest ??= { stdout: this.newBuffer(), stderr: this.newBuffer() };
    this.#rest[stream].push(bytes);
  }

  #release(): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.resolve();
  }

  readonly #sendProgress = (): void => {
    this.#progressTimer = undefined;
    const next = this.#progressNext;
    if (next === undefined || this.closed) return;
    this.#progressNext = undefined;
    this.#progressAt = performance.now();
    this.#link.send(encodeMessage({ type: 'progress', id: this.#id, ...next }));
  };
}

/** Most characters of a `progress` message (the schema's limit). */
export const MAX_PROGRESS_CHARS = 256;

/** A progress message as the wire takes it: one line (line breaks become spaces), at most {@link MAX_PROGRESS_CHARS} characters. */
export function progressText(message: string): string {
  const line = /[\r\n]/.test(message) ? message.replace(/\r?\n|\r/g, ' ') : message;
  return line.length <= MAX_PROGRESS_CHARS ? line : line.slice(0, MAX_PROGRESS_CHARS);
}

function withResolvers(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
