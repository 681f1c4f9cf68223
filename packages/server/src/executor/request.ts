/**
 * The executor's shapes (DESIGN §3): what it is built from (`ExecutorDeps`, `ExecutorOptions`), what a
 * caller asks (`ExecuteRequest`) and gets back (`ExecuteResult`); the default call id; and the
 * caller-misuse checks `execute()` makes before anything runs.
 */
import { type Capture, checkTracestate, parseTraceparent } from '@toolwire/protocol';
import { nanoid } from 'nanoid';
import type { CallEnd, CallRefusal } from '../observe/metrics.js';
import type { Logger } from '../options.js';
import type { LogLimits } from '../session/log-limiter.js';
import type { OutputListener, ProgressListener, RoutedCall, RoutedCapture, ToolInjection } from '../seam.js';
import type { CallBoard } from '../status/call-board.js';
import type { Envelope } from './envelope.js';
import type { ToolControl } from './gates.js';
import type { Projection } from './projection.js';
import { assertSegment } from './record.js';

/** Where calls go that no connected host answers (`route` resolved `undefined`), e.g. local tools. */
export type Fallback = (call: RoutedCall) => Promise<RoutedCapture | undefined>;

/** What the executor reads (the `ToolwireServerOptions` of the same names). Sizes in bytes. */
export interface ExecutorOptions {
  /** Disk record root; `undefined`: no record. */
  recordDir: string | undefined;
  projectionHeadBytes: number;
  projectionTailBytes: number;
  /** Bytes of each stream's live output appended to the record's `stdout.log` / `stderr.log`. */
  maxRecordLogBytes: number;
  /** Disk record write failures logged per window (`maxLogLinesPerHost` per `logWindowMs`, as a host's warnings). */
  logLimits: LogLimits;
  logger: Logger;
}

/** What the executor needs. */
export interface ExecutorDeps {
  /** Tools (for validation) and the router. */
  injection: ToolInjection;
  options: ExecutorOptions;
  /** Optional policy hook, consulted after the grant gate. */
  toolControl?: ToolControl;
  /** Optional local tools, tried when the router answers "not mine". */
  fallback?: Fallback;
  /** Optional: told of every call past the gates, its routing and its end (the status page). */
  board?: CallBoard;
  /**
   * Told of every completed call, and of every call declined by the grant gate or refused by tool
   * control before it ran (the server's metrics, issue 16). Must not throw.
   */
  observer?: { callEnded(end: CallEnd): void; callRefused(refusal: CallRefusal): void };
  /** This server's cluster node id (DESIGN §10): the node of a call to a host on this node. Absent on a single node. */
  node?: string;
}

/** One invocation. */
export interface ExecuteRequest {
  /**
   * Call id, `[A-Za-z0-9._-]{1,128}` (a disk-record path segment). Default: a fresh id, unique in
   * this process and, through a random per-process prefix, across processes (e.g. `V1StGXR8_Z5j2bx`).
   */
  id?: string;
  /** The tool name as the model spelled it. */
  name: string;
  /** The input, verbatim. */
  input: unknown;
  /** The calling agent's id, `[A-Za-z0-9._-]{1,128}` (a disk-record path segment). */
  agent: string;
  /** The agent's workspace root, passed to the host (`TOOLWIRE_WORKSPACE`). Default `""` (the host's root). */
  workspace?: string;
  /** The caller's role, passed to tool control. */
  role?: string;
  /** Tool names this caller may call; `"*"` = all. Default: no gate (all). */
  grant?: readonly string[];
  /** Deadline for this call, ms (positive integer). Default: the tool's or the server's (`deadlineMs`). */
  deadlineMs?: number;
  /** Aborting it stops this call (→ 130), e.g. an MCP `notifications/cancelled`. */
  signal?: AbortSignal;
  /** The call's live output as it arrives (see `RoutedCall.onOutput`: order, backpressure, throws). */
  onOutput?: OutputListener;
  /** The call's progress messages as they arrive (see `RoutedCall.onProgress`). */
  onProgress?: ProgressListener;
  /**
   * W3C `traceparent` (version 00) the call joins: the parent of its `toolwire.call` span, sent to
   * the host and given to the tool as `TRACEPARENT`, recorded in `output.json`. Default: the active
   * OpenTelemetry context, if any.
   */
  traceparent?: string;
  /** W3C `tracestate` going with `traceparent` (printable ASCII, at most 512 characters). */
  tracestate?: string;
  /**
   * Why the input cannot reach the tool unchanged, found by the caller's transport (e.g. the MCP door
   * finds a `__proto__` key): the call completes with 65 and this reason, recorded, nothing routed.
   */
  inputError?: string;
}

/**
 * A completed invocation: the full capture, its bounded projection and the envelope the model reads.
 * `projection`, `envelope`, `startedAt` and `endedAt` are built on first read and kept (read-only
 * getters of the executor's result class: `JSON.stringify` writes them, a spread `{ ...result }` does not).
 */
export interface CompletedResult {
  readonly outcome: 'completed';
  readonly id: string;
  /** Full, uncapped capture (as the router returned it, or synthetic). */
  readonly capture: Capture;
  /** stdout/stderr bounded by the projection limits (see `projection.ts`). */
  readonly projection: Projection;
  readonly envelope: Envelope;
  /** When the executor admitted the call (after the grant gate). */
  readonly startedAt: Date;
  /** When the capture was in hand (before `output.json` was written). */
  readonly endedAt: Date;
}

/**
 * The result of {@link Executor.execute}. `declined` (grant gate) and `refused` (tool control) carry
 * no capture and write no disk record.
 */
export type ExecuteResult = { outcome: 'declined'; id: string; reason: string } | { outcome: 'refused'; id: string; reason: string } | CompletedResult;

/** Random part of every default call id of this process (12 nanoid characters, 72 bits). */
const ID_PREFIX = nanoid(12);
let idCount = 0;

/** The default call id: the per-process prefix and a counter (base 36); `[A-Za-z0-9_-]`, at most 23 characters. */
export function defaultCallId(): string {
  return ID_PREFIX + (idCount++).toString(36);
}

/** The agent id that passed {@link checkRequest} last (an agent calls many times in a row). */
let checkedAgent: string | undefined;

/** Caller-misuse checks of {@link Executor.execute}. */
export function checkRequest(req: ExecuteRequest): void {
  if (typeof req !== 'object' || req === null) throw new TypeError('execute: request must be an object');
  if (typeof req.name !== 'string' || req.name.length === 0) throw new TypeError('execute: name must be a non-empty string');
  if (req.agent !== checkedAgent) {
    assertSegment(req.agent, 'execute: agent');
    checkedAgent = req.agent;
  }
  if (req.id !== undefined) assertSegment(req.id, 'execute: call id');
  if (req.workspace !== undefined && typeof req.workspace !== 'string') throw new TypeError('execute: workspace must be a string');
  if (req.grant !== undefined && (!Array.isArray(req.grant) || !req.grant.every((g) => typeof g === 'string'))) {
    throw new TypeError('execute: grant must be an array of tool names');
  }
  if (req.traceparent !== undefined && parseTraceparent(req.traceparent) === undefined) {
    throw new TypeError(`execute: traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), got ${JSON.stringify(req.traceparent)?.slice(0, 80)}`);
  }
  if (req.tracestate !== undefined && checkTracestate(req.tracestate) === undefined) {
    throw new TypeError('execute: tracestate must be printable ASCII, at most 512 characters');
  }
  if (req.onOutput !== undefined && typeof req.onOutput !== 'function') throw new TypeError('execute: onOutput must be a function');
  if (req.onProgress !== undefined && typeof req.onProgress !== 'function') throw new TypeError('execute: onProgress must be a function');
  if (req.deadlineMs !== undefined && (!Number.isInteger(req.deadlineMs) || req.deadlineMs <= 0)) {
    throw new RangeError(`execute: deadlineMs must be a positive integer (ms), got ${req.deadlineMs}`);
  }
}
