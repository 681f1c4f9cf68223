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

/** Bytes of JSON lines held before they are written within the turn (below sonic-boom's 16 KiB `maxWrite`). */
const HELD_BYTES = 8 * 1024;

/**
 * JSON lines to file descriptor `fd`, written once per event-loop turn (issue 16: a call line must
 * not cost a write(2) of its own): the lines logged during one turn are held by sonic-boom and
 * written together, synchronously, when the turn ends (`setImmediate`), or sooner once
 * {@link HELD_BYTES} are held. No line waits longer than the turn it was logged in, so nothing
 * lingers at a low rate. {@link flushSync} writes what is held; it runs on `exit` (a normal end,
 * `process.exit()`, and the CLI's SIGTERM/SIGINT handling, which returns through its command and
 * exits). Lost on SIGKILL (or a crash of the process itself): the lines of the turn it died in.
 */
export class TurnDestination implements pino.DestinationStream {
  readonly #boom: ReturnType<typeof pino.destination>;
  #scheduled = false;
  readonly #flush = (): void => {
    this.#scheduled = false;
    try {
      this.#boom.flush(); // sync mode: one writeSync of what is held (flushSync would also fsync)
    } catch {
      // destroyed: nothing left to write to
    }
  };
  readonly #onExit = (): void => this.flushSync();

  constructor(fd: number) {
    this.#boom = pino.destination({ dest: fd, sync: true, minLength: HELD_BYTES });
    process.once('exit', this.#onExit);
  }

  write(line: string): void {
    this.#boom.write(line);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  /** Write every held line now (synchronously). */
  flushSync(): void {
    try {
      this.#boom.flushSync();
    } catch {
      // nowhere left to report a failed write of the log itself (stderr closed, EPIPE)
    }
  }
}

/**
 * The destination of a logger writing `format` to `stream` (pretty: colours only on a TTY; written
 * synchronously). JSON to this process's stderr: a {@link TurnDestination} on fd 2.
 */
export function logDestination(format: LogFormat, stream: NodeJS.WritableStream): pino.DestinationStream {
  if (format === 'json') return stream === process.stderr ? new TurnDestination(2) : stream;
  const colorize = (stream as { isTTY?: boolean }).isTTY === true;
  return PinoPretty({ destination: stream, colorize, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
}
