/**
 * The disk record's file writes, off the event loop and batched: one worker thread writes every
 * `input.json` / `output.json` with synchronous file calls, each file to a temp file
 * (`<name>.<12 hex>.tmp`, mode 0600, created exclusively) then renamed over its name, its directory
 * made first (mode 0700) when asked — the same steps and the same crash safety as before, but one
 * message to the thread and one back per batch of files rather than five thread-pool round trips
 * per file (mkdir, open, write, close, rename; see bench/README.md, issue 12 "session 6").
 *
 * A batch goes out at the end of the event loop's turn (`setImmediate`), with every file queued in
 * that turn — the first write after a pause too, and the writes the settling of the last batch led to
 * — so a burst of calls wakes the thread once rather than once for its first file and again for the
 * rest. Files queued while a batch is being written go out together as the next batch, in order. A write
 * resolves once its file is in place and rejects with the file error (its `code`, e.g. `ENOENT`,
 * kept). The thread starts at the first write, keeps the process alive only while writing, ends after
 * {@link IDLE_MS} without writes or at {@link RecordWriter.close}; a thread that dies fails the
 * batch it had (each write rejects) and the next batch gets a fresh one.
 */
import { Worker } from 'node:worker_threads';

/** End the thread after this long without a write, ms. */
export const IDLE_MS = 5_000;

/** One file to write. */
export interface FileWrite {
  /** Absolute path of the file. */
  path: string;
  /** Its full content (UTF-8), when not {@link FileWrite.bytes}. */
  text: string;
  /**
   * Its full content as bytes (then `text` is ignored). Handed over: when it is a whole
   * `ArrayBuffer` it is transferred to the thread (detached here), so the caller must not use it again.
   */
  bytes?: Uint8Array;
  /** Its directory: `'always'` made (recursively) first; `'missing'` made and the write retried when it does not exist; absent: never made. */
  dir?: string;
  mkdir?: 'always' | 'missing';
}

/** A failed write as the thread reports it. */
interface WriteFailure {
  message: string;
  code?: string;
}

/**
 * The thread's code (CommonJS, Node built-ins only: it loads no TypeScript, so it runs the same from
 * sources, the built package and the CLI bundle). Temp names are a 48-bit counter from a random start
 * (one `randomBytes` per thread rather than per file: it cost as much CPU as the rename); the file is
 * created exclusively (`wx`), so a clash fails the write rather than overwrite anything. One message: a batch as one string (see
 * {@link encode}); one reply: per write, `0` or a {@link WriteFailure}, in the same order.
 */
const THREAD_CODE = `
const { parentPort } = require('node:worker_threads');
const { mkdirSync, writeFileSync, renameSync, rmSync } = require('node:fs');
const { randomBytes } = require('node:crypto');
let seq = randomBytes(6).readUIntBE(0, 6);
function atomic(path, text) {
  seq = (seq + 1) % 0x1000000000000;
  const tmp = path + '.' + seq.toString(16).padStart(12, '0') + '.tmp';
  try {
    writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
  } catch (error) {
    try { rmSync(tmp, { force: true }); } catch {}
    throw error;
  }
}
function one(mkdir, dir, path, text) {
  if (mkdir === 'a') mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    atomic(path, text);
  } catch (error) {
    if (mkdir !== 'm' || error.code !== 'ENOENT') throw error;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    atomic(path, text);
  }
}
parentPort.on('message', (message) => {
  const fields = (typeof message === 'string' ? message : message.batch).split('\\0');
  const blobs = typeof message === 'string' ? [] : message.bytes;
  let blob = 0;
  const replies = [];
  for (let i = 0; i + 3 < fields.length; i += 4) {
    try {
      const text = fields[i][1] === 'b' ? blobs[blob++] : fields[i + 3];
      one(fields[i][0], fields[i + 1], fields[i + 2], text);
      replies.push(0);
    } catch (error) {
      replies.push({ message: String(error && error.message), code: error && typeof error.code === 'string' ? error.code : undefined });
    }
  }
  parentPort.postMessage(replies);
});
`;

/** A queued write and how to settle it. */
interface Pending {
  job: FileWrite;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Writes files atomically on one lazily started worker thread, in batches. */
export class RecordWriter {
  #thread: Worker | undefined;
  /** Writes waiting for the next batch. */
  #queue: Pending[] = [];
  /** The batch the thread is writing. */
  #batch: Pending[] | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;
  /** The thread is ref'ed (a batch is in flight). */
  #refed = false;
  /** The end-of-turn send of the next batch, when one is due (ref'ed: queued writes keep the process alive). */
  #due: NodeJS.Immediate | undefined;
  readonly #sendDue = (): void => {
    this.#due = undefined;
    if (this.#queue.length > 0) this.#pump();
    else if (this.#batch === undefined && this.#refed) {
      // Nothing came of the last batch in its turn: idle.
      this.#thread?.unref();
      this.#refed = false;
      this.#armIdle();
    }
  };

  /** Write `job`'s file (temp file, then rename). Rejects with the file error, when closed, or (`TypeError`) when a field holds a NUL. */
  write(job: FileWrite): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the record writer is closed'));
    if (job.path.includes('\0') || (job.bytes === undefined && job.text.includes('\0')) || job.dir?.includes('\0'))
      return Promise.reject(new TypeError('record file fields must not contain NUL'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      this.#schedule();
    });
  }

  /** Send the queue as the next batch at the end of this turn, unless a batch is in flight (then at its end). */
  #schedule(): void {
    if (this.#batch === undefined && this.#due === undefined) this.#due = setImmediate(this.#sendDue);
  }

  /** End the thread; writes queued or in flight reject. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearImmediate(this.#due);
    this.#due = undefined;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    const waiting = [...(this.#batch ?? []), ...this.#queue.splice(0)];
    this.#batch = undefined;
    for (const p of waiting) p.reject(new Error('the record writer is closed'));
    await this.#stopThread();
  }

  #pump(): void {
    if (this.#batch !== undefined || this.#queue.length === 0) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    const batch = this.#queue;
    this.#queue = [];
    this.#batch = batch;
    try {
      const thread = this.#ensureThread();
      const bytes = batch.flatMap(({ job }) => (job.bytes === undefined ? [] : [job.bytes]));
      if (bytes.length === 0) thread.postMessage(encode(batch));
      else
        thread.postMessage(
          { batch: encode(batch), bytes },
          bytes.filter(ownsBuffer).map((b) => b.buffer as ArrayBuffer),
        );
      // A write in flight keeps the process alive, as a file system request would; an idle thread does not.
      if (!this.#refed) {
        thread.ref();
        this.#refed = true;
      }
    } catch (error) {
      this.#fail(error instanceof Error ? error.message : String(error));
    }
  }

  #ensureThread(): Worker {
    if (this.#thread !== undefined) return this.#thread;
    // No inherited flags: the thread needs no TypeScript loader, conditions or profiler.
    const thread = new Worker(THREAD_CODE, { eval: true, execArgv: [], stdout: false, stderr: false });
    thread.on('message', (replies: (0 | WriteFailure)[]) => {
      if (thread === this.#thread) this.#done(replies);
    });
    thread.on('error', (error) => {
      if (thread === this.#thread) this.#fail(error.message);
    });
    thread.on('exit', (code) => {
      if (thread === this.#thread) this.#fail(`the record writer thread exited with code ${code}`);
    });
    thread.unref(); // ref'ed only while a batch is in flight (#pump)
    this.#refed = false;
    this.#thread = thread;
    return thread;
  }

  #done(replies: (0 | WriteFailure)[]): void {
    const batch = this.#batch ?? [];
    this.#batch = undefined;
    for (let i = 0; i < batch.length; i++) {
      const reply = replies[i];
      if (reply === 0) batch[i]!.resolve();
      else batch[i]!.reject(toError(reply ?? { message: 'no reply from the record writer thread' }));
    }
    // The writes these settlements lead to (a call's output.json, the next call's input.json) join
    // the queue in this turn; at its end they go out, or the thread idles.
    this.#schedule();
  }

  /** The thread died or could not be given the batch: fail the batch, drop the thread, go on. */
  #fail(why: string): void {
    void this.#stopThread();
    const batch = this.#batch ?? [];
    this.#batch = undefined;
    for (const p of batch) p.reject(new Error(why));
    this.#pump();
  }

  #armIdle(): void {
    if (this.#thread === undefined || this.#closed) return;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#batch === undefined && this.#queue.length === 0) void this.#stopThread();
    }, IDLE_MS);
    this.#idleTimer.unref();
  }

  async #stopThread(): Promise<void> {
    const thread = this.#thread;
    this.#thread = undefined;
    if (thread === undefined) return;
    try {
      await thread.terminate();
    } catch {
      // already gone
    }
  }
}

/**
 * A batch as one string (one copy to the thread rather than a structured clone of an object per
 * file): per write `<mkdir>\0<dir>\0<path>\0<text>\0`, `<mkdir>` `a` (always), `m` (missing) or `-`,
 * followed by `b` when the content is the next of the batch's {@link FileWrite.bytes} (sent beside
 * the string; `<text>` empty). No field holds a NUL: record paths are checked segments, and JSON
 * text escapes U+0000.
 */
function encode(batch: Pending[]): string {
  let out = '';
  for (const { job } of batch) {
    const mkdir = job.mkdir === 'always' ? 'a' : job.mkdir === 'missing' ? 'm' : '-';
    out += job.bytes === undefined ? `${mkdir}\0${job.dir ?? ''}\0${job.path}\0${job.text}\0` : `${mkdir}b\0${job.dir ?? ''}\0${job.path}\0\0`;
  }
  return out;
}

/** True when `bytes` is a whole, non-shared `ArrayBuffer` (so it can be transferred rather than copied). */
function ownsBuffer(bytes: Uint8Array): boolean {
  return bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
}

function toError(failure: WriteFailure): Error {
  const error = new Error(failure.message) as NodeJS.ErrnoException;
  if (failure.code !== undefined) error.code = failure.code;
  return error;
}
