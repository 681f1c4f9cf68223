/**
 * `toolwire call`'s live output: the call asks the door for `notifications/toolwire/output`
 * (`_meta["toolwire/stream"]: true`), and each chunk is written to this process's stdout or stderr as
 * it arrives, in order, like `ssh host cmd`. At the end, the capture is printed only when the chunks
 * were not the whole output (none arrived: a host that does not stream; or some are missing).
 *
 * Backpressure: when more than {@link HIGH_WATER_BYTES} wait to be written (a slow terminal or pipe),
 * reading the response pauses until they are, so the server holds the tool at its window instead of
 * this process buffering without bound.
 */
import type { CliIO } from '../io.js';
import { write } from '../io.js';

/** `_meta` key of `tools/call` that asks for live output. */
export const STREAM_META = 'toolwire/stream';
/** Method of a live-output notification. */
const OUTPUT_NOTIFICATION = 'notifications/toolwire/output';
/** `_meta` key of the result: `{chunks}` sent by the door. */
const OUTPUT_META = 'toolwire/output';
/** Bytes waiting to be written before reading the response pauses. 1 MiB. */
export const HIGH_WATER_BYTES = 1024 * 1024;

/** A JSON-RPC notification as read off the wire. */
export interface Notification {
  method?: unknown;
  params?: unknown;
}

interface OutputParams {
  stream?: unknown;
  seq?: unknown;
  data?: unknown;
  encoding?: unknown;
}

/** Writes a call's output chunks as they arrive. */
export class LivePrinter {
  readonly #io: Pick<CliIO, 'stdout' | 'stderr'>;
  #writing: Promise<void> = Promise.resolve();
  #queued = 0;
  #next = 0;
  #gap = false;
  #chunks = 0;
  #muted = false;

  constructor(io: Pick<CliIO, 'stdout' | 'stderr'>) {
    this.#io = io;
  }

  /** Chunks received. */
  get chunks(): number {
    return this.#chunks;
  }

  /**
   * Take one notification of the call's response stream. Returns a promise when reading should
   * pause until it settles (too much waiting to be written), else `undefined`. Other notifications,
   * and output notifications of the wrong shape, are ignored.
   */
  take(notification: Notification): Promise<void> | undefined {
    if (notification.method !== OUTPUT_NOTIFICATION) return undefined;
    const p = (notification.params ?? {}) as OutputParams;
    if ((p.stream !== 'stdout' && p.stream !== 'stderr') || !Number.isInteger(p.seq) || typeof p.data !== 'string') return undefined;
    if (p.seq !== this.#next) this.#gap = true;
    this.#next = (p.seq as number) + 1;
    this.#chunks++;
    if (this.#muted) return undefined;
    const bytes = Buffer.from(p.data, p.encoding === 'base64' ? 'base64' : 'utf8');
    const to = p.stream === 'stdout' ? this.#io.stdout : this.#io.stderr;
    this.#queued += bytes.length;
    this.#writing = this.#writing.then(async () => {
      await write(to, bytes);
      this.#queued -= bytes.length;
    });
    return this.#queued > HIGH_WATER_BYTES ? this.#writing : undefined;
  }

  /**
   * Write no later chunk (stdout's reader went away): they are still counted, so {@link complete}
   * holds and the capture is not printed either.
   */
  mute(): void {
    this.#muted = true;
  }

  /** Resolves once every chunk received has been written. */
  flush(): Promise<void> {
    return this.#writing;
  }

  /**
   * True when the chunks printed are the call's whole output, so the capture need not be printed:
   * some arrived, in order from 0, as many as the result's `_meta["toolwire/output"].chunks`.
   */
  complete(result: Record<string, unknown>): boolean {
    const sent = ((result._meta as Record<string, unknown> | undefined)?.[OUTPUT_META] as { chunks?: unknown } | undefined)?.chunks;
    return this.#chunks > 0 && !this.#gap && sent === this.#chunks;
  }
}
