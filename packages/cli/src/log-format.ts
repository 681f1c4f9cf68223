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

/** The destination of a logger writing `format` to `stream` (pretty: colours only on a TTY; written synchronously). */
export function logDestination(format: LogFormat, stream: NodeJS.WritableStream): pino.DestinationStream {
  if (format === 'json') return stream;
  const colorize = (stream as { isTTY?: boolean }).isTTY === true;
  return PinoPretty({ destination: stream, colorize, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' });
}
