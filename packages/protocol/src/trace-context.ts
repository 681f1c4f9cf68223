/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as toolwire carries it: a caller's
 * `traceparent` and `tracestate` cross every hop (MCP door → executor → `call` frame → tool host →
 * the tool's `TRACEPARENT`/`TRACESTATE`) and land in the call's `output.json` (issue 16).
 */

/**
 * A `traceparent` of version `00`: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lower
 * case. An all-zero trace id or parent id is invalid (checked by {@link parseTraceparent}).
 */
export const TRACEPARENT_PATTERN = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Longest `tracestate` carried, characters (the W3C limit: 32 list members of at most 256 bytes is more; 512 is what propagators keep). */
export const MAX_TRACESTATE_LENGTH = 512;

/** A call id (the executor's or a caller's): a disk-record path segment, `[A-Za-z0-9._-]{1,128}`. */
export const CALL_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/** The parts of a valid `traceparent`. */
export interface Traceparent {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero: the caller's span. */
  spanId: string;
  /** Trace flags (bit 0: sampled). */
  flags: number;
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The parts of `value` when it is a valid version-00 `traceparent`, else `undefined` (W3C: an invalid one is ignored). */
export function parseTraceparent(value: unknown): Traceparent | undefined {
  if (typeof value !== 'string' || value.length !== 55 || !TRACEPARENT_PATTERN.test(value)) return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags: Number.parseInt(value.slice(53), 16) };
}

/** The `traceparent` text of `parts`. */
export function formatTraceparent(parts: Traceparent): string {
  return `00-${parts.traceId}-${parts.spanId}-${(parts.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** `value` when it is a `tracestate` toolwire carries (a string of printable ASCII, at most {@link MAX_TRACESTATE_LENGTH}), else `undefined`. */
export function checkTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TRACESTATE_LENGTH || !/^[\x20-\x7e]*$/.test(value)) return undefined;
  return value;
}
