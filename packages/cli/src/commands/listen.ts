/**
 * `--listen HOST:PORT` and the error a bad value or config gives, apart from the config file's
 * schema (`serve-config.ts`): `toolwire host --metrics-listen` needs these, not ajv and the config
 * schema compiled at import.
 */
import { quotedArg } from '../terminal-text.js';

/** Default `--listen`. */
export const DEFAULT_LISTEN = '127.0.0.1:7700';

/** A config file or `--listen` value that cannot be used; the CLI exits 64 with its message. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parse `HOST:PORT` (`[v6]:PORT` for IPv6), e.g. `127.0.0.1:7700`, `0.0.0.0:0`, `[::1]:7700`.
 * @throws ConfigError for any other form or a port outside 0–65535
 */
export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) throw new ConfigError(`--listen must be HOST:PORT (port 0-65535), got ${quotedArg(value)}`);
  return { host: (match[1] ?? match[2])!, port };
}

/**
 * `--metrics-listen`'s value (`serve`, `host`): its address, `undefined` when the flag was not
 * given, or the usage problem to print (a string, naming the flag).
 */
export function metricsAddressOf(value: string | undefined): { host: string; port: number } | undefined | string {
  if (value === undefined) return undefined;
  try {
    return parseListen(value);
  } catch (error) {
    if (error instanceof ConfigError) return `--metrics-listen: ${error.message}`;
    throw error;
  }
}
