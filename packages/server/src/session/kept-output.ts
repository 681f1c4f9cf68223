/**
 * One stream of a streaming call's capture on the server (DESIGN §5 "Live output"): every byte in
 * order, capped head + tail with the same cap and marker as the host's, so the capture is
 * byte-identical whether or not the call streamed.
 *
 * A stream is kept in one of two forms:
 * - **chunks** (the first {@link WHOLE_FROM} bytes, and a stream past its cap): the received chunks by
 *   reference in a {@link HeadTailBuffer}, small chunks gathered first;
 * - **whole** (past {@link WHOLE_FROM} while within its cap): one growable buffer (a resizable
 *   `ArrayBuffer` whose `maxByteLength` is the cap) that each chunk is copied into as it arrives. The
 *   received frame then dies young instead of being kept to the end, the capture's pages are touched
 *   once, and the capture is a view of that buffer — no copy of the whole stream after the tool exits.
 * A stream that grows past its cap leaves the whole form for chunks (its head and the rest copied out,
 * one copy of at most the cap per stream), so a capped stream still keeps head + tail + one chunk.
 */
import { HeadTailBuffer } from '@toolwire/protocol';

/** Bytes of a stream kept as chunks before it moves to one growable buffer (while within its cap). */
export const WHOLE_FROM = 1024 * 1024;

/**
 * Chunks smaller than this are copied together before they are kept: a small Buffer is a slice of
 * Node's shared 8 KiB pool, and keeping thousands of them in a capture's tail would keep thousands
 * of pool slabs alive.
 */
const SMALL_CHUNK_BYTES = 4096;
/** Bytes of small chunks gathered before they are kept as one buffer. */
const GATHER_BYTES = 64 * 1024;

/** A stream as chunks: head + tail ({@link HeadTailBuffer}), small chunks gathered first. */
class Chunks {
  readonly #buffer: HeadTailBuffer;
  #gather: Buffer | undefined;
  #gathered = 0;

  constructor(head: number, tail: number) {
    this.#buffer = new HeadTailBuffer(head, tail);
  }

  /** Bytes pushed so far. */
  get totalBytes(): number {
    return this.#buffer.totalBytes + this.#gathered;
  }

  push(bytes: Uint8Array): void {
    if (bytes.length >= SMALL_CHUNK_BYTES) {
      this.#flush();
      this.#buffer.push(bytes);
      return;
    }
    if (this.#gathered + bytes.length > GATHER_BYTES) this.#flush();
    this.#gather ??= Buffer.allocUnsafeSlow(GATHER_BYTES);
    this.#gather.set(bytes, this.#gathered);
    this.#gathered += bytes.length;
  }

  /** The kept bytes (head + marker + tail when over the cap). */
  bytes(label: string): Uint8Array {
    this.#flush();
    return this.#buffer.bytes(label);
  }

  /** Keep the gathered bytes as one buffer of their own size (not from the pool); the gather buffer is reused. */
  #flush(): void {
    if (this.#gathered === 0) return;
    const kept = Buffer.allocUnsafeSlow(this.#gathered);
    this.#gather!.copy(kept, 0, 0, this.#gathered);
    this.#buffer.push(kept);
    this.#gathered = 0;
  }
}

/** A resizable `ArrayBuffer` (ES2024; Node.js ≥ 20 has it, the project's `lib` is ES2023). */
interface Growable extends ArrayBuffer {
  readonly resizable: boolean;
  resize(byteLength: number): void;
}
const GrowableBuffer = ArrayBuffer as unknown as new (byteLength: number, options: { maxByteLength: number }) => Growable;

/** A growable buffer of `bytes` that may grow to `maxBytes`, or undefined when this runtime cannot make one. */
function growable(bytes: number, maxBytes: number): Growable | undefined {
  try {
    const buffer = new GrowableBuffer(0, { maxByteLength: maxBytes });
    if (buffer.resizable !== true) return undefined;
    buffer.resize(bytes);
    return buffer;
  } catch {
    return undefined; // RangeError: no address space for the reservation, or no memory: the stream stays as chunks
  }
}

/** One stream's capture, capped at `capBytes` (head + tail, half each). */
export class KeptStream {
  readonly #head: number;
  readonly #tail: number;
  /** The chunks form; undefined while the stream is whole. */
  #chunks: Chunks | undefined;
  /** The whole form: the growable buffer, a view that tracks its length, and the bytes written. */
  #whole: Growable | undefined;
  #view: Uint8Array | undefined;
  #length = 0;
  /** Set when a growable buffer could not be had: the stream stays as chunks. */
  #noWhole = false;

  constructor(capBytes: number) {
    this.#head = Math.floor(capBytes / 2);
    this.#tail = capBytes - this.#head;
    this.#chunks = new Chunks(this.#head, this.#tail);
  }

  /** Append one chunk (copied or kept by reference; the caller must not change it afterwards). */
  push(bytes: Uint8Array): void {
    if (this.#whole !== undefined) {
      const end = this.#length + bytes.length;
      if (end <= this.#head + this.#tail && this.#fits(end)) {
        this.#view!.set(bytes, this.#length);
        this.#length = end;
        return;
      }
      this.#toChunks();
    }
    const chunks = this.#chunks!;
    chunks.push(bytes);
    const total = chunks.totalBytes;
    if (total > WHOLE_FROM && total <= this.#head + this.#tail && !this.#noWhole) this.#toWhole(chunks, total);
  }

  /** Grow the growable buffer to hold `end` bytes (doubling, up to the cap); false when the memory cannot be had. */
  #fits(end: number): boolean {
    const whole = this.#whole!;
    if (end <= whole.byteLength) return true;
    try {
      whole.resize(Math.min(this.#head + this.#tail, Math.max(end, whole.byteLength * 2)));
      return true;
    } catch {
      this.#noWhole = true; // RangeError: no memory to commit; the stream goes on as chunks
      return false;
    }
  }

  /** The kept bytes; when over the cap, head + marker line (labelled `label`) + tail. */
  bytes(label: string): Uint8Array {
    if (this.#whole !== undefined) return Buffer.from(this.#whole, 0, this.#length);
    return this.#chunks!.bytes(label);
  }

  /** Chunks → whole: the bytes so far (all kept: within the cap) copied into a new growable buffer. */
  #toWhole(chunks: Chunks, total: number): void {
    const whole = growable(Math.min(this.#head + this.#tail, total * 2), this.#head + this.#tail);
    if (whole === undefined) {
      this.#noWhole = true;
      return;
    }
    this.#view = new Uint8Array(whole);
    this.#view.set(chunks.bytes(''), 0);
    this.#whole = whole;
    this.#length = total;
    this.#chunks = undefined;
  }

  /**
   * Whole → chunks (the stream passes its cap): the head and the rest copied out, so the growable
   * buffer is garbage at once (a capture handed out earlier may still view it; it is never written again).
   */
  #toChunks(): void {
    const view = this.#view!.subarray(0, this.#length);
    const chunks = new Chunks(this.#head, this.#tail);
    chunks.push(Buffer.from(view.subarray(0, this.#head)));
    chunks.push(Buffer.from(view.subarray(this.#head)));
    this.#chunks = chunks;
    this.#whole = undefined;
    this.#view = undefined;
    this.#length = 0;
  }
}
