/**
 * The host's side of a call's observability (issue 16): its `toolwire.call` span through
 * `@opentelemetry/api` only (a no-op unless the embedding program registered an SDK), the trace
 * context its tool gets (`TRACEPARENT`/`TRACESTATE`), and its one info line when it ends:
 * `call` (the call's own id), `wire` (the connection's id, when different), `tool`, `exitCode`,
 * `ms`, `trace` (the trace id). Never its input.
 */
import { type Span, SpanKind, SpanStatusCode, ROOT_CONTEXT, TraceFlags, context, createTraceState, isSpanContextValid, trace } from '@opentelemetry/api';
import { type CallMessage, formatTraceparent, parseTraceparent } from '@toolwire/protocol';
import type { HostMetrics } from '../host/host-metrics.js';
import type { Logger } from '../types.js';

/** Tracer name (instrumentation scope) of the tool host's spans. */
export const TRACER_NAME = '@toolwire/client';
const tracer = trace.getTracer(TRACER_NAME);

/** One call as the host observes it, from its arrival to its answer. */
export class HostCall {
  /** The call's own id (`call.callId`, else the wire id): `TOOLWIRE_CALL_ID`. */
  readonly id: string;
  readonly wire: string;
  readonly tool: string;
  /** The trace context the tool gets, when the call has one. */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  readonly #span: Span;
  readonly #t0 = performance.now();
  #ended = false;

  constructor(call: CallMessage) {
    this.id = call.callId ?? call.id;
    this.wire = call.id;
    this.tool = call.tool;
    const parts = call.traceparent === undefined ? undefined : parseTraceparent(call.traceparent);
    const parent =
      parts === undefined
        ? context.active()
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parts.traceId,
            spanId: parts.spanId,
            traceFlags: parts.flags & TraceFlags.SAMPLED,
            isRemote: true,
            ...(call.tracestate !== undefined && { traceState: createTraceState(call.tracestate) }),
          });
    this.#span = tracer.startSpan('toolwire.call', { kind: SpanKind.SERVER, attributes: { 'toolwire.tool': call.tool, 'toolwire.call_id': this.id } }, parent);
    const sc = this.#span.spanContext();
    if (!isSpanContextValid(sc)) {
      this.traceparent = undefined;
      this.tracestate = undefined;
    } else if (!this.#span.isRecording()) {
      this.traceparent = call.traceparent; // no SDK: the server's context, unchanged
      this.tracestate = call.tracestate;
    } else {
      this.traceparent = formatTraceparent({ traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags });
      this.tracestate = sc.traceState?.serialize() || call.tracestate;
    }
  }

  /**
   * The call was answered with `exitCode`: end its span, log its line and count it in `metrics`
   * (once). `known`: false for a tool this host does not have.
   */
  ended(logger: Logger, exitCode: number, metrics?: HostMetrics, known = true): void {
    if (this.#ended) return;
    this.#ended = true;
    const elapsed = performance.now() - this.#t0;
    const ms = Math.round(elapsed);
    const traceId = this.traceparent?.slice(3, 35);
    metrics?.callEnded({ id: this.id, tool: this.tool, known, exitCode, ms: elapsed, traceId });
    logger.info({ call: this.id, wire: this.wire === this.id ? undefined : this.wire, tool: this.tool, exitCode, ms, trace: traceId }, 'toolwire: call ended');
    const span = this.#span;
    if (span.isRecording()) {
      span.setAttribute('toolwire.exit_code', exitCode);
      if (exitCode !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit code ${exitCode}` });
    }
    span.end();
  }
}
