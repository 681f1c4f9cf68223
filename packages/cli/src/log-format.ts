/**
 * Where `toolwire serve` and `toolwire host` write their logs (issue 16): pino JSON lines on
 * stderr, or `pino-pretty`'s readable lines — on a terminal by default, or as `--log-format
 * pretty|json` says.
 */
import { createRequire } from 'node:module';
import { pino } from 'pino';
import type PinoPrettyFactory from 'pino-pretty';

/** The values `--log-format` takes. */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** `--log-format`'s value checked, or the default for `stream`: pretty on a TTY, JSON otherwise. `undefined` for a bad value. */
export function logFormatOf(value: string | undefined, stream: NodeJS.WritableStream): LogFormat | undefined {
  if (value === undefined) return (stream as { isTTY?: boolean }).isTTY === true ? 'pretty' : 'json';
  return (LOG_FORMATS as readonly string[]).includes(value) ? (value as LogFormat) : undefined;
}

/** Characters (UTF-16 units) of JSON lines held before they are written at once. */
const HELD_CHARS = 8 * 1024;
/** ms a line is held at most before it is written. */
const HOLD_MS = 10;
/** Bytes of the reused buffer held lines are encoded into: room for 16 Ki characters of UTF-8 (at most 3 bytes each); more go through a buffer of their own. */
const BUFFER_BYTES = 48 * 1024;

/**
 * JSON lines to file descriptor `fd`, written together at most {@link HOLD_MS} after the first of
 * them (issue 16: a call line must not cost a write(2) of its own, even at one call at a time).
 * The lines are held as one string (appending a line is a string concatenation, no encoding per
 * line) and encoded into one reused buffer when written, by sonic-boom in sync mode
 * (`contentMode: 'buffer'`: partial writes and `EAGAIN` retried): when the timer fires, or at once
 * when {@link HELD_CHARS} are held. No line waits longer than {@link HOLD_MS}, so nothing lingers
 * at a low rate; the timer does not keep the process alive. (sonic-boom's own holding,
 * `minLength`, has no time bound and measures the byte length of all it holds on every line.)
 * {@link flushSync} writes what is held; it runs on `exit` (a normal end, `process.exit()`, an
 * uncaught exception, and the CLI's SIGTERM/SIGINT handling, which returns through its command and
 * exits). Lost on SIGKILL (or an abort of the process itself): the lines of its last {@link HOLD_MS}.
 */
export class HeldDestination implements pino.DestinationStream {
  readonly #boom: ReturnType<typeof pino.destination>;
  /** The lines held, not yet written. */
  #text = '';
  /**
   * What held lines are encoded into to be written. Reused: in sync mode sonic-boom is done with
   * a buffer when its write returns, unless the write failed (then it keeps it to retry, and this
   * one is replaced, see {@link #hand}).
   */
  #bytes = Buffer.allocUnsafe(BUFFER_BYTES);
  #timer: NodeJS.Timeout | undefined;
  readonly #flush = (): void => {
    this.#timer = undefined;
    this.#write();
  };
  readonly #onExit = (): void => this.flushSync();

  constructor(fd: number) {
    this.#boom = pino.destination({ dest: fd, sync: true, contentMode: 'buffer' });
    process.once('exit', this.#onExit);
  }

  write(line: string): void {
    const text = this.#text + line;
    this.#text = text;
    if (text.length >= HELD_CHARS) this.#write();
    else if (this.#timer === undefined) this.#timer = setTimeout(this.#flush, HOLD_MS).unref();
  }

  /** Write every held line now (synchronously). */
  flushSync(): void {
    this.#write();
    try {
      this.#boom.flushSync();
    } catch {
      // nowhere left to report a failed write of the log itself (stderr closed, EPIPE)
    }
  }

  /** Encode what is held and hand it to sonic-boom, which writes it at once. */
  #write(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const text = this.#text;
    if (text.length === 0) return;
    this.#text = '';
    if (text.length * 3 > BUFFER_BYTES) return this.#hand(Buffer.from(text), false);
    this.#hand(this.#bytes.subarray(0, this.#bytes.write(text, 0)), true);
  }

  /** Hand `bytes` to sonic-boom; `reused`: they are a view of {@link #bytes}. */
  #hand(bytes: Buffer, reused: boolean): void {
    try {
      this.#boom.write(bytes as unknown as string); // contentMode buffer: a Buffer (typed as string)
    } catch {
      // The write failed (or sonic-boom is destroyed): nowhere left to report it. sonic-boom may
      // keep the bytes to write them later, so they are no longer this destination's to reuse.
      if (reused) this.#bytes = Buffer.allocUnsafe(BUFFER_BYTES);
    }
  }
}

/**
 * The destination of a logger writing `format` to `stream` (pretty: colours only on a TTY; written
 * synchronously). JSON to this process's stderr: a {@link HeldDestination} on fd 2.
 */
export function logDestination(format: LogFormat, stream: NodeJS.WritableStream): pino.DestinationStream {
  if (format === 'json') return stream === process.stderr ? new HeldDestination(2) : stream;
  const colorize = (stream as { isTTY?: boolean }).isTTY === true;
  // Loaded only for pretty lines (a terminal, or `--log-format pretty`): JSON logging never loads it.
  const PinoPretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPrettyFactory;
  return PinoPretty({ destination: stream, colorize, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
}
