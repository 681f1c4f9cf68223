/**
 * The disk record (DESIGN §3): `<root>/<agent>/<call id>/input.json` before routing and
 * `output.json` after, each written to a temp file and then renamed, so a reader never sees a
 * partial file. The executor writes it for every call that reaches a capture, never the router.
 *
 * - `input.json`: `{id, name, input}`.
 * - `output.json`: `{id, wireId?, traceparent?, tracestate?, stdout, stderr, exitCode, startedAt, endedAt, failure?, interrupted?}` — full,
 *   uncapped streams; each stream is a UTF-8 string, or `{"base64": "..."}` when it is not valid
 *   UTF-8; times ISO-8601; `failure` only for a synthetic capture; `interrupted: true` only when a
 *   later server start closed the record of a call its process left in flight (`record-recovery.ts`).
 *
 * - `input.ended.<exit code>.json`: `input.json` renamed when `output.json` could not be written (a
 *   full disk, EIO) — a rename needs no free space — so the next start's recovery records that the
 *   call ended with that exit code but its output is lost, not that it was interrupted.
 *
 * Directories are created mode 0700 and files mode 0600 (inputs and outputs may be sensitive). The
 * files are written by one worker thread in batches (`record-writer.ts`).
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Capture } from '@toolwire/protocol';
import { jsonStringLength, writeJsonString } from './json-bytes.js';
import { RecordWriter } from './record-writer.js';

/** Agent ids and call ids that may become a path segment: `[A-Za-z0-9._-]{1,128}`, not `.` or `..`. */
export const SEGMENT_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Throw a `TypeError` (caller misuse) unless `value` is a safe path segment (see
 * {@link SEGMENT_PATTERN}). `what` names the value in the message, e.g. `agent`.
 */
export function assertSegment(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || !SEGMENT_PATTERN.test(value) || value === '.' || value === '..') {
    throw new TypeError(`${what} must match [A-Za-z0-9._-]{1,128} and not be "." or "..", got ${JSON.stringify(value)?.slice(0, 160)}`);
  }
}

/** A stream as stored in `output.json`. */
export type RecordedBytes = string | { base64: string };

/** Encode one stream for `output.json`: UTF-8 text when valid UTF-8, else `{base64}`. */
export function recordBytes(bytes: Uint8Array): RecordedBytes {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return isUtf8(buf) ? buf.toString('utf8') : { base64: buf.toString('base64') };
}

/** A temp file of a record write (`record-writer.ts`): `input.json.<12 hex>.tmp` or `output.json.<12 hex>.tmp`. */
export const TEMP_FILE = /^(?:input|output)\.json\.[0-9a-f]{12}\.tmp$/;

/**
 * The marker of a call that ended but whose `output.json` could not be written: `input.json` renamed
 * to `input.ended.<exit code>.json` ({@link DiskRecord.markEnded}); group 1 is the exit code.
 */
export const ENDED_FILE = /^input\.ended\.(-?\d{1,10})\.json$/;

/** What `output.json` records beside the capture (issue 16): the host connection's id of the call and the caller's trace context. */
export interface CallIds {
  wireId?: string | undefined;
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/** `listen()` found that disk records cannot be written under `recordDir` (its reason: EACCES, EROFS, ENOTDIR…). */
export class RecordDirError extends Error {
  override readonly name = 'RecordDirError';
}

/** Writes the records of calls under one root directory. */
export class DiskRecord {
  /** The record root, absolute. */
  readonly root: string;
  /** `root` ending with the path separator: every record directory starts with it. */
  readonly #prefix: string;
  readonly #writer = new RecordWriter();

  /** @param root record root; resolved against the process cwd. */
  constructor(root: string) {
    this.root = resolve(root);
    this.#prefix = this.root.endsWith(sep) ? this.root : this.root + sep;
  }

  /**
   * Make sure records can be written: create the root (mode 0700, with its parents) and write and
   * remove an empty probe file in it. Called once before the server's port opens, so a folder that
   * cannot be written stops the start instead of failing (and logging) every call.
   * @throws RecordDirError naming the root and the file system's reason
   */
  async checkWritable(): Promise<void> {
    const probe = `${this.#prefix}.toolwire-probe-${randomBytes(6).toString('hex')}`;
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      await writeFile(probe, '', { flag: 'wx', mode: 0o600 });
      await rm(probe, { force: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new RecordDirError(`disk records cannot be written under ${this.root} (recordDir): ${code ?? (error as Error).message}`);
    }
  }

  /** End the writer thread (later writes reject). Idempotent. */
  close(): Promise<void> {
    return this.#writer.close();
  }

  /**
   * The directory of one call, `<root>/<agent>/<id>`. Throws `TypeError` when `agent` or `id` is not
   * a safe segment, or when the result would leave the root.
   */
  dirOf(agent: string, id: string): string {
    assertSegment(agent, 'agent');
    assertSegment(id, 'call id');
    // A checked segment holds no separator and is not `.` or `..`: joined as it is, the path is
    // already normal (no `path.resolve` per record file) and stays under the root.
    const dir = this.#prefix + agent + sep + id;
    if (!dir.startsWith(this.#prefix)) throw new TypeError(`record path escapes the record root: ${dir}`);
    return dir;
  }

  /** Write `input.json` `{id, name, input}`. Rejects on an I/O error, a bad segment or an input JSON cannot hold. */
  writeInput(agent: string, id: string, name: string, input: unknown): Promise<void> {
    // Not async (one promise per write, the writer's): a throw here becomes the rejection.
    try {
      const dir = this.dirOf(agent, id);
      return this.#writer.write({ path: dir + sep + 'input.json', text: jsonText({ id, name, input }), dir, mkdir: 'always' });
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }

  /**
   * After a failed `output.json` write: rename the call's `input.json` to
   * `input.ended.<exitCode>.json` ({@link ENDED_FILE}), in place, so no free space is needed.
   * Rejects on an I/O error (e.g. ENOENT when `input.json` was not written either).
   */
  markEnded(agent: string, id: string, exitCode: number): Promise<void> {
    try {
      const dir = this.dirOf(agent, id);
      return rename(dir + sep + 'input.json', `${dir}${sep}input.ended.${Math.trunc(exitCode)}.json`);
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }

  /**
   * Write `output.json` with the call id, its wire id and trace context (`ids`, when present) and the full capture (its directory is made only if `input.json` did not
   * make it); `interrupted` adds `"interrupted": true`. Rejects on an I/O error.
   */
  writeOutput(agent: string, id: string, capture: Capture, startedAt: Date, endedAt: Date, interrupted = false, ids: CallIds = {}): Promise<void> {
    try {
      return this.#writeOutput(agent, id, capture, startedAt, endedAt, interrupted, ids);
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }

  #writeOutput(agent: string, id: string, capture: Capture, startedAt: Date, endedAt: Date, interrupted: boolean, ids: CallIds): Promise<void> {
    const dir = this.dirOf(agent, id);
    // A big capture's text streams are spliced in as bytes (see outputBytes): '' holds their place.
    const big = capture.stdout.length + capture.stderr.length >= BYTES_FROM;
    const stdoutText = big && isUtf8(capture.stdout);
    const stderrText = big && isUtf8(capture.stderr);
    // One literal with every key, in this order (JSON.stringify leaves out the undefined ones): its
    // hidden class comes with the literal, so it does not die in a full GC while no call is in flight
    // (adding keys one by one made transition maps that did, and V8 then deoptimized every function
    // that had built this object).
    const output = {
      id,
      wireId: ids.wireId,
      traceparent: ids.traceparent,
      tracestate: ids.tracestate,
      stdout: stdoutText ? '' : recordBytes(capture.stdout),
      stderr: stderrText ? '' : recordBytes(capture.stderr),
      exitCode: capture.exitCode,
      startedAt: startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      failure: capture.failure,
      interrupted: interrupted ? true : undefined,
    };
    const path = dir + sep + 'output.json';
    if (!big) return this.#writer.write({ path, text: jsonText(output), dir, mkdir: 'missing' });
    const bytes = outputBytes(jsonText(output), stdoutText ? capture.stdout : undefined, stderrText ? capture.stderr : undefined);
    return this.#writer.write({ path, text: '', bytes, dir, mkdir: 'missing' });
  }
}

/**
 * Captures of at least this many bytes (both streams) have their UTF-8 streams written into
 * `output.json` as bytes, JSON-escaped byte by byte ({@link writeJsonString}), rather than decoded to
 * strings and escaped by `JSON.stringify`: the same file, without two strings of the capture's size.
 */
export const BYTES_FROM = 1024 * 1024;

/**
 * `text` (an `output.json` text whose `stdout` / `stderr` are `""` where given here) as UTF-8 bytes
 * with the JSON string of `stdout` and `stderr` in place of those `""`. The keys are found as
 * `\n  "stdout": ""`: the fields before them are strings, whose JSON text holds no raw newline.
 */
export function outputBytes(text: string, stdout: Uint8Array | undefined, stderr: Uint8Array | undefined): Buffer {
  const parts: (string | Uint8Array)[] = [];
  let from = 0;
  for (const [key, bytes] of [
    ['stdout', stdout],
    ['stderr', stderr],
  ] as const) {
    if (bytes === undefined) continue;
    const field = `\n  "${key}": `;
    const at = text.indexOf(`${field}""`, from) + field.length;
    if (at < field.length) throw new Error(`output.json text without an empty ${key}`);
    parts.push(text.slice(from, at), bytes);
    from = at + 2;
  }
  parts.push(text.slice(from));
  let size = 0;
  for (const p of parts) size += typeof p === 'string' ? Buffer.byteLength(p) : jsonStringLength(p);
  const out = Buffer.allocUnsafeSlow(size);
  let o = 0;
  for (const p of parts) o = typeof p === 'string' ? o + out.write(p, o) : writeJsonString(p, out, o);
  // Every byte of the unzeroed buffer is written (a mismatch would put stale memory in the file).
  if (o !== size) throw new Error(`output.json bytes: wrote ${o} of ${size}`);
  return out;
}

/** A record file's content: `value` as indented JSON and a newline. Throws what `JSON.stringify` throws. */
function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** `error` as an `Error` (a throw here is a `TypeError` or `JSON.stringify`'s error, but a hostile `toJSON` may throw anything). */
function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
