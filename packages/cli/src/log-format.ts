/**
 * Where `toolwire serve` and `toolwire host` write their logs (issue 16): pino JSON lines on
 * stderr, or `pino-pretty`'s readable lines — on a terminal by default, or as `--log-format
 * pretty|json` says.
 */
import { pino } from 'pino';
import PinoPretty from 'pino-pretty';

/** The values `--log-format` takes. */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** `--log-format`'s value checked, or the default for `stream`: pretty on a TTY, JSON otherwise. `undefined` for a bad value. */
export function logFormatOf(value: string | undefined, stream: NodeJS.WritableStream): LogFormat | undefined {
  if (value === undefined) return (stream as { isTTY?: boolean }).isTTY === true ? 'pretty' : 'json';
  return (LOG_FORMATS as readonly string[]).includes(value) ? (value as LogFormat) : undefined;
}

/** Bytes of JSON lines held before they are written at once. */
const HELD_BYTES = 8 * 1024;
/** ms a line is held at most before it is written. */
const HOLD_MS = 10;
/** Bytes of the buffer lines are held in (room for a line of up to {@link HELD_BYTES} / 3 characters past the mark). */
const BUFFER_BYTES = 16 * 1024;

/**
 * JSON lines to file descriptor `fd`, written together at most {@link HOLD_MS} after the first of
 * them (issue 16: a call line must not cost a write(2) of its own, even at one call at a time):
 * the lines are encoded into one buffer and written synchronously (sonic-boom in sync mode,
 * `contentMode: 'buffer'`: partial writes and `EAGAIN` retried) when the timer fires, or at once
 * when {@link HELD_BYTES} are held. No line waits longer than {@link HOLD_MS}, so nothing lingers
 * at a low rate; the timer does not keep the process alive. (sonic-boom's own holding,
 * `minLength`, has no time bound and measures the byte length of all it holds on every line.)
 * {@link flushSync} writes what is held; it runs on `exit` (a normal end, `process.exit()`, an
 * uncaught exception, and the CLI's SIGTERM/SIGINT handling, which returns through its command and
 * exits). Lost on SIGKILL (or an abort of the process itself): the lines of its last {@link HOLD_MS}.
 */
export class HeldDestination implements pino.DestinationStream {
  readonly #boom: ReturnType<typeof pino.destination>;
  readonly #held = Buffer.allocUnsafe(BUFFER_BYTES);
  /** Bytes of {@link #held} in use. */
  #used = 0;
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
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    if (this.#used + line.length * 3 > BUFFER_BYTES) {
      this.#write();
      if (line.length * 3 > BUFFER_BYTES) return this.#hand(Buffer.from(line));
    }
    this.#used += this.#held.write(line, this.#used);
    if (this.#used >= HELD_BYTES) this.#write();
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

  /** Hand what is held to sonic-boom (as a copy: it keeps a buffer whose write failed), which writes it at once. */
  #write(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#used === 0) return;
    const bytes = Buffer.from(this.#held.subarray(0, this.#used));
    this.#used = 0;
    this.#hand(bytes);
  }

  #hand(bytes: Buffer): void {
    try {
      this.#boom.write(bytes as unknown as string); // contentMode buffer: a Buffer (typed as string)
    } catch {
      // destroyed: nowhere left to report it
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
  return PinoPretty({ destination: stream, colorize, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
}
