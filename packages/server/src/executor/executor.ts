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
import { endCallTrace, startCallTrace } from '../observe/tracing.js';
import type { RoutedCapture, ToolInjection } from '../seam.js';
import { CallReport } from './call-report.js';
import { CallSignals } from './call-signals.js';
import { Completed } from './completed.js';
import { consultToolControl, isGranted, type ToolControl, untilAborted } from './gates.js';
import { isCapture, settleRouted } from './routed.js';
import { DiskRecord } from './record.js';
import { type RecoveryReport, closeInterruptedRecords } from './record-recovery.js';
import { RecordLog, outputListener } from './record-log.js';
import { type ExecuteRequest, type ExecuteResult, type ExecutorDeps, type ExecutorOptions, type Fallback, checkRequest, defaultCallId } from './request.js';
import { message, quote, shown } from './reason-text.js';
import { validateInput } from './validate.js';
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
  /** The info line and metrics of each completed call, the metrics of each refused one (issue 16). */
  readonly #report: CallReport;
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
    this.#report = new CallReport(deps.options.logger, deps.observer, () => deps.injection.tools());
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
   * with an interrupted capture 69, and those of calls that ended but whose `output.json` could not be
   * written (`input.ended.<code>.json`) with capture 70 (`record-recovery.ts`), leaving this executor's calls in flight
   * alone, and log how many at info. Resolves with the counts (all zero without `recordDir`);
   * never rejects (a failure is logged at error).
   */
  async closeInterruptedRecords(): Promise<RecoveryReport> {
    const log = this.#options.logger;
    if (this.#record === undefined) return { closed: 0, outputLost: 0, tempFilesRemoved: 0, failed: 0 };
    const live = (agent: string, id: string): boolean => this.#liveRecords.has(`${agent}/${id}`);
    const report = await closeInterruptedRecords(this.#record, live, (error, path) => log.error({ err: error, path }, 'cannot close an interrupted disk record'));
    log.info({ recordDir: this.#record.root, ...report }, `closed ${report.closed} disk record(s) of calls interrupted by an earlier server stop`);
    if (report.outputLost > 0) {
      log.info(
        { recordDir: this.#record.root, outputLost: report.outputLost },
        `closed ${report.outputLost} disk record(s) of calls that ended but whose output.json could not be written`,
      );
    }
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
      this.#report.refused('declined', name);
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
          this.#report.refused('refused', name);
          return { outcome: 'refused', id, reason: verdict.reason };
        }
      }
      live = this.#board?.begin(id, agent, shown(name), startedMs);
      const invalid = req.inputError !== undefined ? failureCapture('invalid_input', req.inputError) : this.#validate(name, input);
      const record = this.#record;
      let inputWritten = false;
      if (record) {
        // Awaited inline (no closure or async helper per write); a failure is logged and never loses the capture.
        try {
          await record.writeInput(agent, id, name, input);
          inputWritten = true;
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
        // promise and frame fewer per call). Fallback, 127 and malformed captures: settleRouted (routed.ts).
        let routed: RoutedCapture | undefined;
        try {
          routed = await this.#injection.route(call);
        } catch (error) {
          routed = failureCapture('host_error', `router failed: ${message(error)}`);
        }
        capture = routed !== undefined && isCapture(routed) ? routed : await settleRouted(call, routed, this.#fallback);
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
          // Tell the next start's recovery that the call ended (its exit code), not that it was interrupted.
          if (inputWritten)
            await record.markEnded(agent, id, done.exitCode).catch((markError: unknown) => this.#writeFailed(markError, 'input.json (ended marker)', agent, id));
        }
      }
      this.#report.ended(id, name, agent, host, node, wireId, done, endedMs - startedMs, trace.traceparent);
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

  /** Step 3: capture 65 (or 70) when `input` fails the tool's inputSchema (`validate.ts`). */
  #validate(name: string, input: unknown): Capture | undefined {
    return validateInput(this.#injection.tools(), name, input);
  }

  /** Log a failed record write, rate-limited (the call goes on). */
  #writeFailed(error: unknown, file: string, agent: string, id: string): void {
    this.#recordErrors.line({ err: error, agent, id, file }, 'disk record write failed');
  }
}
