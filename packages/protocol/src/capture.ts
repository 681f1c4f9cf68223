/**
 * Captures: the three facts every invocation ends in (seed: `RoutedCapture`), and the helpers that
 * build synthetic ones and bound long streams.
 */
import { type Failure, FailureKind } from './codes.js';
import { utf8 } from './bytes.js';
import { countNewlines } from './newlines.js';
import type { ContentBlock } from './messages.js';

/**
 * The outcome of one invocation: `{stdout, stderr, exitCode}` as bytes, plus an optional
 * machine-readable `failure` kind when toolwire (not the tool) ended the call.
 */
export interface Capture {
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** 0 success; the tool's own code; or one of `ExitCode` for synthetic captures. */
  exitCode: number;
  failure?: Failure;
  /** A tool served from an MCP server: its content blocks, unchanged (the MCP door returns them). */
  content?: ContentBlock[];
  /** A tool served from an MCP server: its `structuredContent`, unchanged. */
  structured?: Record<string, unknown>;
}

/** Partial output to keep in a synthetic capture. */
export interface PartialOutput {
  stdout?: Uint8Array;
  stderr?: Uint8Array;
}

const NEWLINE = 0x0a;

/**
 * Build a synthetic capture for `failure` (exit code from `FailureKind`). Keeps any partial output;
 * stderr ends with exactly one line `toolwire: <reason>` (DESIGN §4).
 *
 * @example failureCapture('deadline', 'deadline of 500 ms exceeded') // exitCode 124
 */
export function failureCapture(failure: Failure, reason: string, partial: PartialOutput = {}): Capture {
  return {
    stdout: partial.stdout ?? new Uint8Array(0),
    stderr: appendReason(partial.stderr, reason),
    exitCode: FailureKind[failure],
    failure,
  };
}

/** Append the line `toolwire: <reason>\n` to `stderr`, adding a newline first if needed. */
export function appendReason(stderr: Uint8Array | undefined, reason: string): Uint8Array {
  const line = utf8(`toolwire: ${reason}\n`);
  if (!stderr || stderr.length === 0) return line;
  const gap = stderr[stderr.length - 1] === NEWLINE ? 0 : 1;
  const out = new Uint8Array(stderr.length + gap + line.length);
  out.set(stderr, 0);
  if (gap) out[stderr.length] = NEWLINE;
  out.set(line, stderr.length + gap);
  return out;
}

/** Number of lines in `bytes`: newline count, plus one for a final unterminated line. */
export function countLines(bytes: Uint8Array): number {
  return countNewlines(bytes) + (bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE ? 1 : 0);
}

/**
 * Keep the first `head` and last `tail` bytes of a stream of `totalBytes` / `totalLines`, with one
 * marker line between them, e.g.
 * `[... stdout truncated: 1048576 bytes / 20000 lines total; showing the first 16384 and last 16384 bytes ...]`.
 * Returns `bytes` unchanged when `bytes.length <= head + tail`.
 */
export function headTail(bytes: Uint8Array, head: number, tail: number, label: string): Uint8Array {
  if (bytes.length <= head + tail) return bytes;
  return joinHeadTail(bytes.subarray(0, head), bytes.subarray(bytes.length - tail), label, bytes.length, countLines(bytes));
}

/** Join a kept head and tail with the truncation marker line (see {@link headTail}). */
export function joinHeadTail(headBytes: Uint8Array, tailBytes: Uint8Array, label: string, totalBytes: number, totalLines: number): Uint8Array {
  const lead = headBytes.length > 0 && headBytes[headBytes.length - 1] !== NEWLINE ? '\n' : '';
  const marker = utf8(
    `${lead}[... ${label} truncated: ${totalBytes} bytes / ${totalLines} lines total; ` +
      `showing the first ${headBytes.length} and last ${tailBytes.length} bytes ...]\n`,
  );
  const out = new Uint8Array(headBytes.length + marker.length + tailBytes.length);
  out.set(headBytes, 0);
  out.set(marker, headBytes.length);
  out.set(tailBytes, headBytes.length + marker.length);
  return out;
}

/**
 * A bounded accumulator for a stream of chunks: keeps the first `head` and the last `tail` bytes and
 * counts the rest. Memory stays under `head + tail + one chunk`. Used by the tool host to cap a
 * subprocess's stdout/stderr (DESIGN §7).
 */
export class HeadTailBuffer {
  readonly #head: number;
  readonly #tail: number;
  readonly #headChunks: Uint8Array[] = [];
  #headLen = 0;
  #tailChunks: Uint8Array[] = [];
  #tailLen = 0;
  #total = 0;
  /** Newlines in the chunks dropped from the tail (the kept ones are counted only when a marker needs them). */
  #droppedNewlines = 0;
  #last = -1;

  /** @param head bytes kept at the start (≥ 0) @param tail bytes kept at the end (≥ 0) */
  constructor(head: number, tail: number) {
    if (!Number.isInteger(head) || head < 0 || !Number.isInteger(tail) || tail < 0) {
      throw new RangeError(`HeadTailBuffer: head and tail must be non-negative integers, got ${head}, ${tail}`);
    }
    this.#head = head;
    this.#tail = tail;
  }

  /** Total bytes pushed so far. */
  get totalBytes(): number {
    return this.#total;
  }

  /** Append one chunk. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#total += chunk.length;
    this.#last = chunk[chunk.length - 1]!;
    let rest = chunk;
    if (this.#headLen < this.#head) {
      const take = Math.min(this.#head - this.#headLen, rest.length);
      this.#headChunks.push(rest.subarray(0, take));
      this.#headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.#tail === 0) return;
    this.#tailChunks.push(rest);
    this.#tailLen += rest.length;
    while (this.#tailLen - this.#tailChunks[0]!.length >= this.#tail) {
      const dropped = this.#tailChunks.shift()!;
      this.#tailLen -= dropped.length;
      this.#droppedNewlines += countNewlines(dropped);
    }
  }

  /** The kept bytes; when anything was dropped, head + marker line (labelled `label`) + tail. */
  bytes(label: string): Uint8Array {
    if (this.#total === this.#headLen + this.#tailLen && this.#total <= this.#head + this.#tail) {
      // Nothing dropped: one copy of every chunk, not head and tail first (a kept capture can be large).
      return Buffer.concat([...this.#headChunks, ...this.#tailChunks], this.#total);
    }
    const head = Buffer.concat(this.#headChunks);
    let tail = Buffer.concat(this.#tailChunks);
    if (tail.length > this.#tail) tail = tail.subarray(tail.length - this.#tail);
    let newlines = this.#droppedNewlines;
    for (const chunk of this.#headChunks) newlines += countNewlines(chunk);
    for (const chunk of this.#tailChunks) newlines += countNewlines(chunk);
    const lines = newlines + (this.#last !== NEWLINE ? 1 : 0);
    return joinHeadTail(head, tail, label, this.#total, lines);
  }
}
