/** The W3C trace context of an MCP `tools/call` (issue 16): `_meta.traceparent`, else the HTTP `traceparent` header. */
import { checkTracestate, parseTraceparent } from '@toolwire/protocol';

/** `_meta` key of the caller's W3C `traceparent` (the OpenTelemetry MCP semantic conventions' key). */
export const TRACEPARENT_META = 'traceparent';
/** `_meta` key of the caller's W3C `tracestate`. */
export const TRACESTATE_META = 'tracestate';

/** Trace context fields for `ExecuteRequest`: empty when the caller sent none or an invalid one. */
export function traceContextOf(
  meta: Record<string, unknown> | undefined,
  headers: Record<string, string | string[] | undefined> | undefined,
): { traceparent?: string; tracestate?: string } {
  let parent: unknown = meta?.[TRACEPARENT_META];
  let state: unknown = meta?.[TRACESTATE_META];
  if (parent === undefined && headers !== undefined) {
    parent = headers.traceparent;
    state = headers.tracestate;
  }
  if (typeof parent !== 'string' || parseTraceparent(parent) === undefined) return {};
  const tracestate = checkTracestate(state);
  return tracestate === undefined ? { traceparent: parent } : { traceparent: parent, tracestate };
}
