/**
 * A `tools/call`'s live output through the MCP door (DESIGN §3), for one call:
 *
 * - **Progress** (standard MCP) — when the request carries `_meta.progressToken`, the door sends
 *   `notifications/progress` `{progressToken, progress, message?}` while the call runs: at least
 *   every `progressIntervalMs` (default 5000) even when the tool is silent, and on output at most
 *   every {@link PROGRESS_MIN_GAP_MS}. `progress` is the bytes of output so far (stdout + stderr),
 *   raised to one more than the last notification's when nothing arrived meanwhile (MCP asks that it
 *   grow with each notification); `message` is the tool's own progress message (`ctx.progress`, until
 *   newer output arrives), else the last non-empty line of output, at most {@link MESSAGE_CHARS} characters. Clients that reset their request timeout on progress (the
 *   SDK's `resetTimeoutOnProgress`) keep waiting for a long call.
 * - **Output** (a toolwire extension) — when `_meta["toolwire/stream"]` is `true`, each chunk is
 *   sent as `notifications/toolwire/output` `{stream, seq, data, encoding?}` (`data` UTF-8 text, or
 *   base64 with `encoding: "base64"` when the chunk is not valid UTF-8), and the result carries
 *   `_meta["toolwire/output"]` `{chunks}`: how many were sent. The next chunk is taken once the
 *   response stream has drained (backpressure reaches the tool through the call's credit window).
 *
 * Without either key nothing changes: no listener, no timer.
 */
import type { ServerResponse } from 'node:http';
import { toWire } from '@toolwire/protocol';
import type { Logger } from '../options.js';
import type { OutputChunk } from '../seam.js';

/** `_meta` key of `tools/call` asking for `notifications/toolwire/output`. */
export const STREAM_META = 'toolwire/stream';
/** Method of the output notification. */
export const OUTPUT_NOTIFICATION = 'notifications/toolwire/output';
/** `_meta` key of a streamed call's result: `{chunks}`. */
export const OUTPUT_META = 'toolwire/output';
/** Output does not send progress more often than this, ms (the interval timer may). */
export const PROGRESS_MIN_GAP_MS = 250;
/** Longest progress `message`, characters (longer: cut, with `…`). */
export const MESSAGE_CHARS = 200;
/** Bytes of recent output kept to find the last line. */
const RECENT_BYTES = 1024;

/** A notification as the SDK's `extra.sendNotification` takes it. */
export interface Notification {
  method: string;
  params: Record<string, unknown>;
}

/** What one call's live output needs. */
export interface LiveOutputOptions {
  /** `_meta.progressToken` of the request, if any. */
  progressToken: string | number | undefined;
  /** `_meta["toolwire/stream"] === true`. */
  stream: boolean;
  /** ms, ≥ 1. */
  progressIntervalMs: number;
  /** Sends a notification related to the request (the SDK's `extra.sendNotification`). */
  send: (notification: Notification) => Promise<void>;
  /** The HTTP response the request's SSE stream is written to, for backpressure (when known). */
  response: ServerResponse | undefined;
  logger: Logger;
}

/** The progress `message`: the last non-empty line of `recent`, at most {@link MESSAGE_CHARS} characters. */
export function lastLine(recent: Uint8Array): string | undefined {
  const lines = Buffer.from(recent.buffer, recent.byteOffset, recent.byteLength).toString('utf8').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.replace(/\r$/, '').trim();
    if (line.length === 0) continue;
    return cut(line);
  }
  return undefined;
}

/** `text` at most {@link MESSAGE_CHARS} characters (longer: cut, with `…`). */
function cut(text: string): string {
  const chars = [...text];
  return chars.length > MESSAGE_CHARS ? `${chars.slice(0, MESSAGE_CHARS - 1).join('')}…` : text;
}

/** One `tools/call`'s progress and output notifications. Made by {@link liveOutput}. */
export class LiveOutput {
  readonly #o: LiveOutputOptions;
  #timer: NodeJS.Timeout | undefined;
  #bytes = 0;
  #progress = -1;
  #lastSentAt = 0;
  #recent: Buffer = Buffer.alloc(0);
  /** The tool's last progress message (`ctx.progress`), until newer output arrives. */
  #note: string | undefined;
  /** Sends a progress message that came within the gap after the last notification. */
  #noteTimer: NodeJS.Timeout | undefined;
  #chunks = 0;
  #closed = false;
  /** The wait for the response's 'drain' that chunks handed on meanwhile share (see #drained). */
  #drain: Promise<void> | undefined;

  constructor(options: LiveOutputOptions) {
    this.#o = options;
    if (options.progressToken !== undefined) {
      this.#lastSentAt = performance.now();
      this.#timer = setInterval(() => this.#sendProgress(), options.progressIntervalMs);
    }
  }

  /** Output notifications sent. */
  get chunks(): number {
    return this.#chunks;
  }

  /** The call's consumer (`ExecuteRequest.onOutput`). */
  readonly listener = (chunk: OutputChunk): void | Promise<void> => {
    if (this.#closed) return;
    this.#bytes += chunk.bytes.length;
    this.#remember(chunk.bytes);
    if (this.#noteTimer === undefined) this.#note = undefined; // a note not sent yet goes first
    this.#progressSoon();
    if (!this.#o.stream) return;
    this.#chunks++;
    const wire = toWire(chunk.bytes);
    const params: Record<string, unknown> = { stream: chunk.stream, seq: chunk.seq, data: wire.text };
    if (wire.encoding !== undefined) params.encoding = wire.encoding;
    return this.#o.send({ method: OUTPUT_NOTIFICATION, params }).then(
      () => this.#drained(),
      (error: unknown) => this.#o.logger.debug({ err: error }, 'MCP door: output notification not sent'),
    );
  };

  /**
   * The call's progress consumer (`ExecuteRequest.onProgress`): the tool's message (an in-process
   * tool's `ctx.progress`) becomes the progress `message` until newer output arrives, sent as soon as
   * the gap between notifications allows; without a message, it counts as progress alone.
   */
  readonly onProgress = (message: string | undefined): void => {
    if (this.#closed) return;
    if (message !== undefined && message.trim().length > 0) this.#note = cut(message.trim());
    if (this.#timer === undefined) return;
    const wait = this.#lastSentAt + Math.min(PROGRESS_MIN_GAP_MS, this.#o.progressIntervalMs) - performance.now();
    if (wait <= 0) this.#sendProgress();
    else this.#noteTimer ??= setTimeout(this.#sendNote, wait); // sent at the end of the gap, even if output comes first
  };

  readonly #sendNote = (): void => {
    this.#noteTimer = undefined;
    this.#sendProgress();
  };

  /** The call settled: no more notifications; the timer is cleared. Idempotent. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#noteTimer);
    this.#noteTimer = undefined;
  }

  /** Send progress now when the last notification is at least {@link PROGRESS_MIN_GAP_MS} old (the interval timer sends the rest). */
  #progressSoon(): void {
    if (this.#timer !== undefined && performance.now() - this.#lastSentAt >= Math.min(PROGRESS_MIN_GAP_MS, this.#o.progressIntervalMs)) {
      this.#sendProgress();
    }
  }

  #remember(bytes: Uint8Array): void {
    const fresh = bytes.length >= RECENT_BYTES ? bytes.subarray(bytes.length - RECENT_BYTES) : bytes;
    const joined = Buffer.concat([this.#recent, fresh]);
    this.#recent = joined.length > RECENT_BYTES ? joined.subarray(joined.length - RECENT_BYTES) : joined;
  }

  #sendProgress(): void {
    if (this.#closed || this.#o.progressToken === undefined) return;
    clearTimeout(this.#noteTimer);
    this.#noteTimer = undefined;
    this.#progress = Math.max(this.#bytes, this.#progress + 1);
    this.#lastSentAt = performance.now();
    const params: Record<string, unknown> = { progressToken: this.#o.progressToken, progress: this.#progress };
    const message = this.#note ?? (this.#recent.length > 0 ? lastLine(this.#recent) : undefined);
    if (message !== undefined) params.message = message;
    this.#o.send({ method: 'notifications/progress', params }).catch((error: unknown) => {
      this.#o.logger.debug({ err: error }, 'MCP door: progress notification not sent');
    });
  }

  /**
   * Resolves once the response stream has room again (at once when it has). The chunks of a window
   * are handed on without waiting for each other, so they share one wait: one 'drain' and one
   * 'close' listener on the response, not one per chunk.
   */
  #drained(): Promise<void> | undefined {
    const res = this.#o.response;
    if (res === undefined || !res.writableNeedDrain || res.destroyed) return undefined;
    this.#drain ??= new Promise((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        res.off('close', done);
        this.#drain = undefined;
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
    return this.#drain;
  }
}

/** The live output of a call whose request asked for it (`progressToken` or `toolwire/stream`), else `undefined`. */
export function liveOutput(options: LiveOutputOptions): LiveOutput | undefined {
  if (options.progressToken === undefined && !options.stream) return undefined;
  return new LiveOutput(options);
}
