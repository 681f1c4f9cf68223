/**
 * Spans of calls (issue 16) through `@opentelemetry/api` only: with no OpenTelemetry SDK registered
 * by the embedding program every span is a no-op (the API's default), so toolwire forces no SDK on
 * anyone. A call's parent is the caller's `traceparent` (MCP `_meta.traceparent`, the HTTP
 * `traceparent` header, or `ExecuteRequest.traceparent`), else the active context of the library
 * call. The host and the tool get the `toolwire.call` span's context when an SDK records it, else
 * the caller's `traceparent` unchanged — the trace id is the caller's either way.
 */
import {
  type Context,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  context,
  createTraceState,
  isSpanContextValid,
  trace,
  TraceFlags,
} from '@opentelemetry/api';
import { type Capture, formatTraceparent, parseTraceparent } from '@toolwire/protocol';

/** Tracer name (instrumentation scope) of the server's spans. */
export const TRACER_NAME = '@toolwire/server';
/** A proxy: it follows whatever tracer provider is registered when a span starts. */
const tracer = trace.getTracer(TRACER_NAME);

/** What the API's tracer provider delegates to while no SDK is registered: its no-op provider. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True when no OpenTelemetry SDK is registered: every span would be a non-recording no-op. (A
 * provider registered through another copy of the API is taken for an SDK.)
 */
export function noTracing(): boolean {
  return (trace.getTracerProvider() as { getDelegate?: () => unknown }).getDelegate?.() === NOOP_PROVIDER;
}

/** One call's span and the trace context the host is to get. */
export interface CallTrace {
  span: Span;
  /** The `traceparent` to send to the host, or `undefined` when the call has no trace context. */
  traceparent: string | undefined;
  tracestate: string | undefined;
}

/** The parent context of a call: the caller's `traceparent` (already checked), else the active context. */
function parentOf(traceparent: string | undefined, tracestate: string | undefined): Context {
  const active = context.active();
  const parts = traceparent === undefined ? undefined : parseTraceparent(traceparent);
  if (parts === undefined) return active;
  return trace.setSpanContext(active, {
    traceId: parts.traceId,
    spanId: parts.spanId,
    traceFlags: parts.flags & TraceFlags.SAMPLED,
    isRemote: true,
    ...(tracestate !== undefined && { traceState: createTraceState(tracestate) }),
  });
}

/**
 * A call with no trace context while no SDK is registered: its span would be a non-recording no-op
 * and the host would get no context, so every such call shares this (its span's `end()` does nothing).
 */
const UNTRACED: CallTrace = Object.freeze({ span: trace.wrapSpanContext(INVALID_SPAN_CONTEXT), traceparent: undefined, tracestate: undefined });

/**
 * Start the `toolwire.call` span of one call (attributes `toolwire.tool`, `toolwire.agent`,
 * `toolwire.call_id`). Costs a provider lookup and nothing else when the call has no `traceparent`
 * and no SDK is registered.
 */
export function startCallTrace(id: string, tool: string, agent: string, traceparent: string | undefined, tracestate: string | undefined): CallTrace {
  if (traceparent === undefined && noTracing()) return UNTRACED;
  const span = tracer.startSpan(
    'toolwire.call',
    { kind: SpanKind.SERVER, attributes: { 'toolwire.tool': tool, 'toolwire.agent': agent, 'toolwire.call_id': id } },
    parentOf(traceparent, tracestate),
  );
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return { span, traceparent: undefined, tracestate: undefined };
  if (!span.isRecording()) return { span, traceparent, tracestate }; // no SDK: pass the caller's on as it came
  return {
    span,
    traceparent: formatTraceparent({ traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags }),
    tracestate: sc.traceState?.serialize() || tracestate,
  };
}

/** End a call's span with its host and exit code (status ERROR for a non-zero exit code). */
export function endCallTrace(trace: CallTrace, capture: Capture, host: string | undefined): void {
  if (trace === UNTRACED) return; // its no-op span has nothing to end
  const span = trace.span;
  if (!span.isRecording()) return span.end();
  span.setAttribute('toolwire.exit_code', capture.exitCode);
  if (host !== undefined) span.setAttribute('toolwire.host', host);
  if (capture.failure !== undefined) span.setAttribute('toolwire.failure', capture.failure);
  if (capture.exitCode !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit code ${capture.exitCode}` });
  span.end();
}

/** The trace id of a call's trace context, or `undefined` (for logs and metric exemplars). */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return traceparent === undefined ? undefined : traceparent.slice(3, 35);
}
