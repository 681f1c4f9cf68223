/**
 * The executor (DESIGN §3): the one place a call is answered. For each invocation, in order:
 *
 * 1. **grant gate** — the name must be in the caller's grant (`"*"` = all), else `declined`;
 * 2. **tool control** — the optional hook may refuse (fails closed), else `refused`;
 * 3. **input validation** — against the inputSchema the tool advertised (`injection.tools()`);
 *    a mismatch is capture 65 with the ajv errors on stderr, nothing routed;
 * 4. **disk record** `input.json` (when `recordDir` is set);
 * 5. **route** — `injection.route(call)`; `undefined` falls through to `fallback`, else capture 127;
 * 6. **disk record** `output.json`;
 * 7. **bounded projection** and **envelope** (built when the result's reader first asks, `completed.ts`).
 *
 * `stop(agent?)` aborts the calls in flight (→ 130, by the router through `call.signal`); a stop that
 * lands before routing yields 130 without routing. A router or fallback that throws, or returns a
 * malformed capture, is converted here to capture 70.
 */
import { type Capture, failureCapture } from '@toolwire/protocol';
import { CallLines, type CallLineFields } from '../observe/call-lines.js';
import type { CallRefusal } from '../observe/metrics.js';
import { endCallTrace, startCallTrace, traceIdOf } from '../observe/tracing.js';
import type { RoutedCall, RoutedCapture, ToolInjection } from '../seam.js';
import { CallSignals } from './call-signals.js';
import { Completed } from './completed.js';
import { consultToolControl, isGranted, type ToolControl } from './gates.js';
import { DiskRecord } from './record.js';
import { type RecoveryReport, closeInterruptedRecords } from './record-recovery.js';
import { RecordLog, outputListener } from './record-log.js';
import { type ExecuteRequest, type ExecuteResult, type ExecutorDeps, type ExecutorOptions, type Fallback, checkRequest, defaultCallId } from './request.js';
import { message, quote, shown } from './reason-text.js';
import { toolIndex, validateInput } from './validate.js';
import type { CallBoard, LiveCall } from '../status/call-board.js';
import { type ScopedCall, STOP_SCOPE } from '../session/stop-watch.js';
import { LogLimiter, type LogSource } from '../session/log-limiter.js';

/**
 * Disk record write failures: a full or read-only record folder fails every call's writes, so their
 * error lines are rate-limited (the calls go on).
 */
const RECORD_FAILURES: LogSource = { level: 'error', suppressed: (n) => `${n} more disk record write failures suppressed` };

/** Runs invocations through the gates, the router and the disk record. */
export class Executor {
  readonly #injection: ToolInjection;
  readonly #options: ExecutorOptions;
  readonly #toolControl: ToolControl | undefined;
  readonly #fallback: Fallback | undefined;
  readonly #record: DiskRecord | undefined;
  readonly #board: CallBoard | undefined;
  readonly #observer: ExecutorDeps['observer'];
  /** The info line of each completed call (issue 16). */
  readonly #lines: CallLines;
  readonly #node: string | undefined;
  /** The stop signal of every call in flight (per agent, joined to the caller's signal). */
  readonly #signals = new CallSignals();
  /** `<agent>/<id>` of the calls in flight whose record is open (only with a record dir): crash recovery leaves them alone. */
  readonly #liveRecords = new Set<string>();
  /** Error lines of failed record writes, at most `logLimits` (with `recordDir`). */
  readonly #recordErrors: LogLimiter;
  #idle: (() => void)[] = [];

  constructor(deps: ExecutorDeps) {
    this.#injection = deps.injection;
    this.#options = deps.options;
    this.#toolControl = deps.toolControl;
    this.#fallback = deps.fallback;
    this.#board = deps.board;
    this.#observer = deps.observer;
    this.#lines = new CallLines(deps.options.logger);
    this.#node = deps.node;
    this.#record = deps.options.recordDir === undefined ? undefined : new DiskRecord(deps.options.recordDir);
    this.#recordErrors = new LogLimiter(deps.options.logger, deps.options.logLimits, undefined, RECORD_FAILURES);
  }

  /** Calls admitted past the grant gate and not yet settled. */
  get inFlight(): number {
    return this.#signals.inFlight;
  }

  /**
   * Run one invocation. Never rejects for anything a router, host or hook does; throws at once
   * (synchronously) on caller misuse: `TypeError` for a bad `name`/`agent`/`id`/`workspace`/`grant`/`traceparent`/`tracestate`,
   * `RangeError` for a `deadlineMs` that is not a positive integer.
   */
  execute(req: ExecuteRequest): Promise<ExecuteResult> {
    checkRequest(req);
    const id = req.id ?? defaultCallId();
    return this.#run(req, id);
  }

  /**
   * Stop every call in flight of `agent` (all agents when omitted): each settles as capture 130.
   * In a cluster, a stop of one agent also reaches every other node (their calls of that agent
   * stop too); a stop of all agents stays on this node (it is what a node's shutdown does).
   * @returns the number of calls stopped on this node (calls already stopped are not counted again).
   */
  stop(agent?: string): number {
    const stopped = this.#signals.stop(agent);
    if (agent !== undefined) this.onStop?.(agent);
    return stopped;
  }

  /** Stop `agent`'s calls on this node only (a stop another cluster node passed on). */
  stopHere(agent: string): number {
    return this.#signals.stop(agent);
  }

  /** Set by a cluster node: told of each `stop(agent)` made here, to pass it on. Internal. */
  onStop: ((agent: string) => void) | undefined;

  /**
   * With `recordDir`: make sure records can be written there (the folder is created if missing).
   * Used by `ToolwireServer.listen()` before the port opens. Resolves at once without `recordDir`.
   * @throws RecordDirError naming the folder and the file system's reason (EACCES, EROFS, ENOTDIR…)
   */
  checkRecordDir(): Promise<void> {
    return this.#record?.checkWritable() ?? Promise.resolve();
  }

  /**
   * Complete the disk records an earlier server process left open (`input.json`, no `output.json`)
   * with an interrupted capture 69 (`record-recovery.ts`), leaving this executor's calls in flight
   * alone, and log how many at info. Resolves with the counts (all zero without `recordDir`);
   * never rejects (a failure is logged at error).
   */
  async closeInterruptedRecords(): Promise<RecoveryReport> {
    const log = this.#options.logger;
    if (this.#record === undefined) return { closed: 0, tempFilesRemoved: 0, failed: 0 };
    const live = (agent: string, id: string): boolean => this.#liveRecords.has(`${agent}/${id}`);
    const report = await closeInterruptedRecords(this.#record, live, (error, path) => log.error({ err: error, path }, 'cannot close an interrupted disk record'));
    log.info({ recordDir: this.#record.root, ...report }, `closed ${report.closed} disk record(s) of calls interrupted by an earlier server stop`);
    return report;
  }

  /**
   * End the disk record's writer thread (with `recordDir`); record writes after this fail (logged).
   * Used by `ToolwireServer.close()` once the calls settled. Idempotent; never rejects.
   */
  close(): Promise<void> {
    return this.#record?.close() ?? Promise.resolve();
  }

  /** Resolves when no call is in flight (at once when none is). Used by `ToolwireServer.close()`. */
  whenIdle(): Promise<void> {
    if (this.#signals.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async #run(req: ExecuteRequest, id: string): Promise<ExecuteResult> {
    const { name, agent, input } = req;
    const log = this.#options.logger;
    if (!isGranted(req.grant, name)) {
      const reason = `tool ${quote(name)} is not granted to agent ${quote(agent)}`;
      log.info({ id, agent, tool: shown(name) }, 'call declined by the grant gate');
      this.#refused('declined', name);
      return { outcome: 'declined', id, reason };
    }
    // No controller or AbortSignal.any() per call: see call-signals.ts.
    const scope = this.#signals.enter(agent, req.signal);
    const signal = scope.signal;
    const recordKey = this.#record && `${agent}/${id}`;
    if (recordKey !== undefined) this.#liveRecords.add(recordKey);
    // ms since the epoch, kept as numbers (one clock read each) until the result is built
    const startedMs = Date.now();
    let live: LiveCall | undefined;
    const trace = startCallTrace(id, shown(name), agent, req.traceparent, req.tracestate);
    let host: string | undefined;
    let wireId: string | undefined;
    let node: string | undefined;
    let capture: Capture | undefined;
    let endedMs: number | undefined;
    try {
      if (this.#toolControl) {
        const request = { id, name, input, agent, role: req.role };
        const verdict = await untilAborted(consultToolControl(this.#toolControl, request), signal);
        if (verdict && !verdict.pass) {
          log.info({ id, agent, tool: shown(name), reason: verdict.reason }, 'call refused by tool control');
          this.#refused('refused', name);
          return { outcome: 'refused', id, reason: verdict.reason };
        }
      }
      live = this.#board?.begin(id, agent, shown(name), startedMs);
      const invalid = req.inputError !== undefined ? failureCapture('invalid_input', req.inputError) : this.#validate(name, input);
      const record = this.#record;
      if (record) {
        // Awaited inline (no closure or async helper per write); a failure is logged and never loses the capture.
        try {
          await record.writeInput(agent, id, name, input);
        } catch (error) {
          this.#writeFailed(error, 'input.json', agent, id);
        }
      }
      // The scope's own flag, not `signal.aborted` (a getter that checks its receiver): the same state.
      if (scope.aborted) capture = failureCapture('cancelled', 'call stopped before it was routed');
      else if (invalid) capture = invalid;
      else {
        const streamLog = this.#record && new RecordLog(this.#record, agent, id, this.#options.maxRecordLogBytes, this.#recordErrors);
        // `host` and `wireId` present from the start (`undefined` = not set yet): the router's writes
        // of them then change no object shape and add no property store to the call.
        // `onOutput` in the literal too: with a record every call has one, and a key added after the
        // literal makes a hidden class that no live object holds between calls (see keep-shape.ts).
        const onOutput = outputListener(streamLog, req.onOutput);
        // The router reads the stop from `scope` (one of two classes), not from `signal` (a hidden class per signal).
        const call: ScopedCall = {
          id,
          name,
          input,
          workspace: req.workspace ?? '',
          agent,
          signal,
          host: undefined,
          wireId: undefined,
          onOutput,
          [STOP_SCOPE]: scope,
        };
        if (req.deadlineMs !== undefined) call.deadlineMs = req.deadlineMs;
        if (trace.traceparent !== undefined) call.traceparent = trace.traceparent;
        if (trace.tracestate !== undefined) call.tracestate = trace.tracestate;
        if (req.onProgress !== undefined) call.onProgress = req.onProgress;
        if (live !== undefined) live.routed = call;
        // The router answers almost every call; awaited here rather than in an async helper (one
        // promise and frame fewer per call). Fallback, 127 and malformed captures: #settleRouted.
        let routed: RoutedCapture | undefined;
        try {
          routed = await this.#injection.route(call);
        } catch (error) {
          routed = failureCapture('host_error', `router failed: ${message(error)}`);
        }
        capture = routed !== undefined && isCapture(routed) ? routed : await this.#settleRouted(call, routed);
        host = call.host;
        node = call.node ?? (host === undefined ? undefined : this.#node);
        wireId = call.wireId;
        if (streamLog?.used) await streamLog.close(); // the logs are complete before output.json appears
      }
      const done = capture;
      endedMs = Date.now();
      // The projection, the envelope and the Dates are built when first read (completed.ts).
      const result = new Completed(id, done, this.#options.projectionHeadBytes, this.#options.projectionTailBytes, startedMs, endedMs);
      if (record) {
        const ids = { wireId, traceparent: req.traceparent, tracestate: req.tracestate };
        try {
          await record.writeOutput(agent, id, done, result.startedAt, result.endedAt, false, ids);
        } catch (error) {
          this.#writeFailed(error, 'output.json', agent, id);
        }
      }
      this.#ended(id, name, agent, host, node, wireId, done, endedMs - startedMs, trace.traceparent);
      return result;
    } finally {
      if (capture !== undefined) endCallTrace(trace, capture, host);
      else trace.span.end();
      if (live !== undefined) this.#board!.end(live, capture, endedMs);
      this.#signals.leave(agent, scope);
      if (recordKey !== undefined) this.#liveRecords.delete(recordKey);
      if (this.#idle.length > 0 && this.#signals.inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /**
   * The one info line of a completed call (issue 16: `call`, `tool`, `host`, `agent`, `exitCode`,
   * `failure`, `ms`, `bytesOut`; `wire` and `trace` when there are; in a cluster `node`, the node
   * of the host that answered), and its metrics. Never the input.
   */
  #ended(
    id: string,
    tool: string,
    agent: string,
    host: string | undefined,
    node: string | undefined,
    wire: string | undefined,
    capture: Capture,
    ms: number,
    traceparent: string | undefined,
  ): void {
    const observer = this.#observer;
    const lines = this.#lines;
    const logging = lines.enabled;
    if (observer === undefined && !logging) return; // nothing to tell: no fields built
    const bytesOut = capture.stdout.byteLength + capture.stderr.byteLength;
    const traceId = traceIdOf(traceparent);
    if (logging) {
      const fields: CallLineFields = { call: id, exitCode: capture.exitCode, ms, bytesOut };
      if (wire !== undefined) fields.wire = wire;
      if (node !== undefined) fields.node = node;
      if (capture.failure !== undefined) fields.failure = capture.failure;
      if (traceId !== undefined) fields.trace = traceId;
      lines.ended(shown(tool), host, agent, fields);
    }
    if (observer === undefined) return;
    const known = host !== undefined || toolIndex(this.#injection.tools()).has(tool);
    try {
      observer.callEnded({ id, tool, known, host, node, exitCode: capture.exitCode, ms, bytesOut, traceId });
    } catch (error) {
      this.#options.logger.error({ err: error, call: id }, 'call observer failed');
    }
  }

  /** Count a call declined (grant gate) or refused (tool control) before it ran, in the metrics. */
  #refused(outcome: CallRefusal['outcome'], tool: string): void {
    const observer = this.#observer;
    if (observer === undefined) return;
    try {
      observer.callRefused({ outcome, tool, known: toolIndex(this.#injection.tools()).has(tool) });
    } catch (error) {
      this.#options.logger.error({ err: error, tool }, 'call observer failed');
    }
  }

  /** Step 3: capture 65 (or 70) when `input` fails the tool's inputSchema (`validate.ts`). */
  #validate(name: string, input: unknown): Capture | undefined {
    return validateInput(this.#injection.tools(), name, input);
  }

  /** After the router answered `routed` ("not mine" or malformed): fall back, then 127; a throw or malformed capture becomes 70. */
  async #settleRouted(call: RoutedCall, routed: RoutedCapture | undefined): Promise<Capture> {
    let capture = routed;
    if (capture === undefined && this.#fallback) {
      try {
        capture = await this.#fallback(call);
      } catch (error) {
        return failureCapture('host_error', `local tool failed: ${message(error)}`);
      }
    }
    if (capture === undefined) return failureCapture('not_found', `no such tool ${quote(call.name)}`);
    if (!isCapture(capture)) return failureCapture('host_error', 'the router returned a malformed capture');
    return capture;
  }

  /** Log a failed record write, rate-limited (the call goes on). */
  #writeFailed(error: unknown, file: string, agent: string, id: string): void {
    this.#recordErrors.line({ err: error, agent, id, file }, 'disk record write failed');
  }
}

/** Resolve with `promise`'s value, or `undefined` as soon as `signal` aborts. `promise` must not reject. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then((value) => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    });
  });
}

function isCapture(value: unknown): value is Capture {
  const c = value as Partial<Capture> | null;
  return typeof c === 'object' && c !== null && c.stdout instanceof Uint8Array && c.stderr instanceof Uint8Array && Number.isInteger(c.exitCode);
}
