/**
 * The per-call info line written without pino's generic serializer (issue 16, the speed target; the
 * tool host has the same file, `packages/client/src/calls/pino-direct.ts`):
 * the line is pino's own level string, time and bindings (`chindings`: base, child bindings, their
 * redaction and `formatters.bindings` applied when the child was made) followed by the caller's
 * fields, already JSON, and pino's message and line end — the same bytes `child.info(fields, msg)`
 * writes, to the same destination. Only for a plain pino logger of the pino this package loads:
 * any option that would change the line or needs pino's metadata (a `mixin`, `nestedKey`,
 * `msgPrefix`, `formatters.log`, a `logMethod` or `streamWrite` hook, a serializer or redaction of
 * one of the line's keys or of every key, a destination that wants metadata such as
 * `pino.multistream`, a subscriber to pino's `pino_asJson` diagnostics channel) makes
 * {@link directLine} answer `undefined` or {@link DirectLine.write} return false, and the caller
 * logs through pino as usual. The caller checks the level (`isLevelEnabled`) first.
 */
import { tracingChannel } from 'node:diagnostics_channel';
import { pino } from 'pino';

/** The names of the pino symbols used here. */
type SymbolName =
  | 'lsCacheSym'
  | 'timeSym'
  | 'chindingsSym'
  | 'streamSym'
  | 'endSym'
  | 'messageKeySym'
  | 'mixinSym'
  | 'nestedKeySym'
  | 'msgPrefixSym'
  | 'serializersSym'
  | 'formattersSym'
  | 'hooksSym'
  | 'stringifiersSym'
  | 'wildcardFirstSym'
  | 'needsMetadataGsym';
/** pino's symbols (public as `pino.symbols`; `msgPrefixSym` is there at run time though not in its types). */
const { lsCacheSym, timeSym, chindingsSym, streamSym, endSym, messageKeySym, mixinSym, nestedKeySym, msgPrefixSym } = pino.symbols as unknown as Record<
  SymbolName,
  symbol
>;
const { serializersSym, formattersSym, hooksSym, stringifiersSym, wildcardFirstSym, needsMetadataGsym } = pino.symbols as unknown as Record<SymbolName, symbol>;
/** pino's own channel around its serializer: a subscriber expects every line to go through it. */
const asJsonChannel = tracingChannel('pino_asJson');

/** A pino logger as seen through its symbols. */
type PinoInternals = Record<symbol, unknown> & { levels?: { values?: Record<string, number> } };

/** One kind of line (fixed keys and message) written straight to a pino logger's destination. */
export interface DirectLine {
  /**
   * Write one info line whose fields are `body`: `,"key":value` pairs, JSON already (keys among
   * those given to {@link directLine}). False (nothing written) when pino must write it instead.
   */
  write(body: string): boolean;
}

/** `text` as a JSON string: as is between quotes when it has nothing to escape (printable ASCII but the quote and the backslash). */
export function quote(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 32 || c > 126 || c === 34 || c === 92) return JSON.stringify(text);
  }
  return `"${text}"`;
}

/** True when `value` is a pino logger of this package's pino with none of the options that change a line. */
function isPlain(logger: PinoInternals, keys: readonly string[]): boolean {
  if (typeof logger[chindingsSym] !== 'string' || typeof logger[timeSym] !== 'function') return false;
  if (logger[mixinSym] || logger[nestedKeySym] || typeof logger[msgPrefixSym] === 'string') return false;
  const formatters = logger[formattersSym] as { log?: unknown } | undefined;
  const hooks = logger[hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  if (formatters?.log !== undefined || hooks?.logMethod !== undefined || hooks?.streamWrite !== undefined) return false;
  const stream = logger[streamSym] as (Record<symbol, unknown> & { write?: unknown }) | undefined;
  if (typeof stream?.write !== 'function' || stream[needsMetadataGsym] === true) return false;
  const serializers = (logger[serializersSym] ?? {}) as Record<string, unknown>;
  const stringifiers = (logger[stringifiersSym] ?? {}) as Record<string | symbol, unknown>;
  if (stringifiers[wildcardFirstSym] !== undefined) return false;
  const messageKey = logger[messageKeySym] as string;
  return [...keys, messageKey].every((key) => serializers[key] === undefined && stringifiers[key] === undefined);
}

/**
 * The direct writer of `msg` lines with `keys` through `logger`, or `undefined` when `logger` is
 * not a plain pino logger (then log through it). Make it once per (child) logger, not per line.
 */
export function directLine(logger: object, keys: readonly string[], msg: string): DirectLine | undefined {
  const internals = logger as PinoInternals;
  if (!isPlain(internals, keys)) return undefined;
  const info = internals.levels?.values?.info;
  const levels = internals[lsCacheSym] as Record<number, string> | undefined;
  const level = info === undefined ? undefined : levels?.[info];
  if (typeof level !== 'string') return undefined;
  const stream = internals[streamSym] as { write(line: string): unknown };
  const time = internals[timeSym] as (this: unknown) => string;
  const tail = `,"${internals[messageKeySym] as string}":${JSON.stringify(msg)}${internals[endSym] as string}`;
  return {
    write(body: string): boolean {
      if (asJsonChannel.hasSubscribers) return false;
      // chindings read per line: `setBindings()` replaces them.
      stream.write(level + time.call(logger) + (internals[chindingsSym] as string) + body + tail);
      return true;
    },
  };
}
