/**
 * Live output in the disk record (DESIGN §3): while a call streams, its chunks are appended as they
 * arrive to `<root>/<agent>/<call id>/stdout.log` and `stderr.log` (mode 0600, opened without
 * following a symlink, made at the first chunk of that stream), so a server that dies mid-call
 * keeps what was produced. `output.json` is still written at the end with the capture.
 *
 * Each log holds at most `maxBytes` (`maxRecordLogBytes`); past that it ends with one line
 * `[... toolwire: stdout.log stops here at N bytes (maxRecordLogBytes) ...]` and the rest is not
 * written. A write failure is logged once and the log is given up; it never affects the call.
 */
import { constants } from 'node:fs';
import { type FileHandle, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { keepShape } from '../keep-shape.js';
import type { LogLimiter } from '../session/log-limiter.js';
import type { OutputChunk, OutputListener } from '../seam.js';
import type { DiskRecord } from './record.js';

/** Flags of a log file: write, create, truncate (a call id used again starts afresh), never through a symlink. */
const FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;

class StreamLog {
  handle: Promise<FileHandle | undefined> | undefined = undefined;
  written = 0;
  full = false;
}

/**
 * The two stream logs of one call. Made for every call while a record is kept, so it does nothing
 * until the first chunk (most calls never stream).
 */
export class RecordLog {
  readonly #record: DiskRecord;
  readonly #agent: string;
  readonly #id: string;
  readonly #maxBytes: number;
  /** Where a failed append is logged (the executor's rate-limited record errors). */
  readonly #errors: Pick<LogLimiter, 'line'>;
  #logs: { stdout: StreamLog; stderr: StreamLog } | undefined;
  /** The last write queued: writes run one at a time, in chunk order. */
  #tail: Promise<void> | undefined;
  #failed = false;
  /** The first instance is kept (`keepShape`): one per call, none alive between calls. */
  static #shapeKept = false;

  /** `agent` and `id` must be safe path segments (the executor checked them). */
  constructor(record: DiskRecord, agent: string, id: string, maxBytes: number, errors: Pick<LogLimiter, 'line'>) {
    this.#record = record;
    this.#agent = agent;
    this.#id = id;
    this.#maxBytes = maxBytes;
    this.#errors = errors;
    if (!RecordLog.#shapeKept) {
      RecordLog.#shapeKept = true;
      keepShape(this);
    }
  }

  /** True once a chunk was appended (then {@link close} must be awaited). */
  get used(): boolean {
    return this.#tail !== undefined;
  }

  /** Append `chunk` to its stream's log; resolves once written (or given up). Never rejects. */
  append(chunk: OutputChunk): Promise<void> {
    const previous = this.#tail ?? Promise.resolve();
    this.#tail = previous.then(() => this.#write(chunk.stream, chunk.bytes));
    return this.#tail;
  }

  /** Wait for the queued writes, then close both files. Never rejects. */
  async close(): Promise<void> {
    await this.#tail;
    for (const log of Object.values(this.#logs ?? {})) {
      const handle = await log.handle;
      await handle?.close().catch((error: unknown) => this.#fail(error));
    }
  }

  async #write(stream: 'stdout' | 'stderr', bytes: Uint8Array): Promise<void> {
    this.#logs ??= { stdout: new StreamLog(), stderr: new StreamLog() };
    const log = this.#logs[stream];
    if (log.full || this.#failed) return;
    log.handle ??= this.#open(stream);
    const handle = await log.handle;
    if (handle === undefined) return;
    const room = this.#maxBytes - log.written;
    try {
      if (bytes.length <= room) {
        await handle.write(bytes);
        log.written += bytes.length;
        return;
      }
      if (room > 0) await handle.write(bytes.subarray(0, room));
      log.written += room;
      log.full = true;
      await handle.write(`\n[... toolwire: ${stream}.log stops here at ${log.written} bytes (maxRecordLogBytes) ...]\n`);
    } catch (error) {
      this.#fail(error);
    }
  }

  async #open(stream: 'stdout' | 'stderr'): Promise<FileHandle | undefined> {
    try {
      const dir = this.#record.dirOf(this.#agent, this.#id);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      return await open(join(dir, `${stream}.log`), FLAGS, 0o600);
    } catch (error) {
      this.#fail(error);
      return undefined;
    }
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#errors.line({ err: error, agent: this.#agent, id: this.#id }, 'disk record: appending live output failed; the call goes on');
  }
}

/**
 * The consumer the executor gives the router: the disk record's log (when there is one) and the
 * caller's own consumer (when there is one), in that order; `undefined` when neither. It resolves
 * when both have taken the chunk, so the slower one sets the pace (backpressure). A throw of the
 * caller's consumer is the router's to log; the record's write never rejects.
 */
export function outputListener(log: RecordLog | undefined, listener: OutputListener | undefined): OutputListener | undefined {
  if (log === undefined) return listener;
  if (listener === undefined) return (chunk) => log.append(chunk);
  return (chunk) => {
    const written = log.append(chunk);
    const taken = listener(chunk);
    return taken === undefined ? written : Promise.all([written, taken]).then(() => undefined);
  };
}
