/**
 * One request header read from `req.rawHeaders`, without `req.headers`. node:http builds the
 * `req.headers` object on its first read (every header line lower-cased and merged); an upgrade that
 * is refused needs only `Host`, `Origin` and `Authorization`, and a flood of refused upgrades
 * would otherwise pay for building that object on every one (bench/README.md, ids).
 */
import type { IncomingMessage } from 'node:http';

/** The headers read this way: node:http keeps the first `Host` and `Authorization` (later ones are dropped) and joins repeated `Origin`s with `, `. */
export type RawHeaderName = 'host' | 'authorization' | 'origin';

/**
 * The value `req.headers[name]` has, read from `req.rawHeaders` (name/value pairs as received; as
 * many as node:http kept under `maxHeadersCount`): `undefined` when absent; for `host` and
 * `authorization` the first value; for `origin` every value joined with `, `.
 */
export function headerOf(req: IncomingMessage, name: RawHeaderName): string | undefined {
  const raw = req.rawHeaders;
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length !== name.length || field.toLowerCase() !== name) continue;
    if (value === undefined) {
      value = raw[i + 1]!;
      if (name !== 'origin') return value;
    } else {
      value += `, ${raw[i + 1]!}`;
    }
  }
  return value;
}
