/**
 * The host's side of a call's observability (issue 16): its `toolwire.call` span through
 * `@opentelemetry/api` only (a no-op unless the embedding program registered an SDK), the trace
 * context its tool gets (`TRACEPARENT`/`TRACESTATE`), and its one info line when it ends:
 * `call` (the call's own id), `wire` (the connection's id, when different), `tool`, `exitCode`,
 * `ms`, `trace` (the trace id), `toolPid` (the pid of its subprocess tool, when it started one; pino's
 * own `pid` is the host's). Never its input.
 * The line is made by a child logger per tool (pino serializes `tool` once per child, not per
 * line), at most {@link MAX_TOOL_LOGGERS} per logger, and written straight to its destination when
 * it is a plain pino logger (`pino-direct.ts`: the same line pino would write); nothing is made
 * when info is off.
 */
import {
  type Span,
  SpanKind,
  SpanStatusCode,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  TraceFlags,
  context,
  createTraceState,
  isSpanContextValid,
  trace,
} from '@opentelemetry/api';
import { type CallMessage, formatTraceparent, parseTraceparent } from '@toolwire/protocol';
import type { HostMetrics } from '../host/host-metrics.js';
import { type DirectLine, directLine, quote } from './pino-direct.js';
import type { Logger } from '../types.js';

/** Tracer name (instrumentation scope) of the tool host's spans. */
export const TRACER_NAME = '@toolwire/client';
const tracer = trace.getTracer(TRACER_NAME);

/** The tracer provider the API falls back to while no SDK registered one (a no-op). */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True when an OpenTelemetry SDK registered a tracer provider (checked per call: one may be
 * registered or disabled at any time). Without one every span is a no-op, so a call that brings no
 * trace context needs none: its tool gets no `TRACEPARENT` either way.
 */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** Child loggers kept at most per logger (one per tool name seen; emptied when full). */
export const MAX_TOOL_LOGGERS = 1024;
/** The message of a call's line. */
const MESSAGE = 'toolwire: call ended';
/** Every key the call line writes beside `tool`. */
const KEYS = ['call', 'exitCode', 'ms', 'wire', 'trace', 'toolPid'] as const;

/** What the call line uses of a logger beyond {@link Logger}: pino's `child` and `isLevelEnabled`, when present. */
interface Parent extends Logger {
  child?: (bindings: Record<string, string>) => Logger;
  isLevelEnabled?: (level: string) => boolean;
}
/** A tool's child logger and, for a plain pino logger, its direct line writer. */
interface ToolLogger {
  logger: Logger;
  direct: DirectLine | undefined;
}
/** The per-tool children of each logger. */
const toolLoggers = new WeakMap<Logger, Map<string, ToolLogger>>();

/** The fields of a call line beside `tool`. */
interface LineFields {
  call: string;
  exitCode: number;
  /** ms */
  ms: number;
  wire?: string;
  trace?: string;
  toolPid?: number;
}

/** `fields` as the JSON of a line's body (`,"key":value` in {@link KEYS} order, absent ones left out), as pino writes them. */
function body(fields: LineFields): string {
  let out = `,"call":${quote(fields.call)},"exitCode":${fields.exitCode},"ms":${fields.ms}`;
  if (fields.wire !== undefined) out += `,"wire":${quote(fields.wire)}`;
  if (fields.trace !== undefined) out += `,"trace":${quote(fields.trace)}`;
  if (fields.toolPid !== undefined) out += `,"toolPid":${fields.toolPid}`;
  return out;
}

/** Log a call's end line through `logger`'s child for `tool` (see the file's comment). */
function logCallEnd(logger: Parent, tool: string, fields: LineFields): void {
  if (logger.isLevelEnabled !== undefined && !logger.isLevelEnabled('info')) return;
  if (logger.child === undefined) {
    (fields as LineFields & { tool: string }).tool = tool; // the line's own object: no copy
    return logger.info(fields, MESSAGE);
  }
  let children = toolLoggers.get(logger);
  if (children === undefined) toolLoggers.set(logger, (children = new Map<string, ToolLogger>()));
  let child = children.get(tool);
  if (child === undefined) {
    if (children.size >= MAX_TOOL_LOGGERS) children.clear();
    const made = logger.child({ tool });
    child = { logger: made, direct: directLine(made, KEYS, MESSAGE) };
    children.set(tool, child);
  }
  // Finite integers and strings only (exit code, ms, pid): the body is what pino would make of them.
  if (child.direct !== undefined && Number.isFinite(fields.ms) && child.direct.write(body(fields))) return;
  child.logger.info(fields, MESSAGE);
}

/** One call as the host observes it, from its arrival to its answer. */
export class HostCall {
  /** The call's own id (`call.callId`, else the wire id): `TOOLWIRE_CALL_ID`. */
  readonly id: string;
  readonly wire: string;
  readonly tool: string;
  /** The trace context the tool gets, when the call has one. */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  /** Its span; none when the call has no trace context and no SDK is registered (see {@link tracing}). */
  readonly #span: Span | undefined;
  readonly #t0 = performance.now();
  /** The pid of its subprocess tool, once started (none for in-process and MCP tools). */
  #pid: number | undefined;
  #ended = false;

  constructor(call: CallMessage) {
    this.id = call.callId ?? call.id;
    this.wire = call.id;
    this.tool = call.tool;
    if (call.traceparent === undefined && !tracing()) {
      this.#span = undefined;
      this.traceparent = undefined;
      this.tracestate = undefined;
      return;
    }
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

  /** Its subprocess tool started as process `pid` (told through the call's context). */
  toolStarted(pid: number): void {
    this.#pid = pid;
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
    const fields: LineFields = { call: this.id, exitCode, ms };
    if (this.wire !== this.id) fields.wire = this.wire;
    if (traceId !== undefined) fields.trace = traceId;
    if (this.#pid !== undefined) fields.toolPid = this.#pid;
    logCallEnd(logger, this.tool, fields);
    const span = this.#span;
    if (span === undefined) return;
    if (span.isRecording()) {
      span.setAttribute('toolwire.exit_code', exitCode);
      if (exitCode !== 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit code ${exitCode}` });
    }
    span.end();
  }
}
