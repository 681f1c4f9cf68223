/**
 * The calls one host session has sent and not yet settled (DESIGN §6). Each pending call has exactly
 * one owner (this map) and settles exactly once, through one settle function that deletes it from
 * the map and ends its deadline (`deadlines.ts`) and its stop watch (`stop-watch.ts`). Whatever
 * settles first wins: the host's result, the deadline, the stop grace, a wrong-shape frame naming
 * it, or the session ending.
 */
import {
  type CallMessage,
  type Capture,
  encodeMessage,
  type Failure,
  failureCapture,
  fromWire,
  type OutputFrame,
  type ProgressMessage,
  type ResultMessage,
} from '@toolwire/protocol';
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { Logger } from '../options.js';
import type { RoutedCall } from '../seam.js';
import { MAX_ID_DRAWS, sequentialCallId } from './call-id.js';
import { Deadlines } from './deadlines.js';
import { OutputStream, type OutputSettings } from './output-stream.js';
import { Entry } from './pending-entry.js';
import { isStopped, watchCall } from './stop-watch.js';
import { STOP_REASON, stoppedCapture } from './stopped-capture.js';

/**
 * Wire ids remembered of calls this session ended before their host answered (deadline, stop past
 * its grace), until that host's result for them arrives; past it the oldest is forgotten.
 */
export const MAX_ENDED_HERE = 256;

/** Pending calls of one host session, keyed by wire id (fresh per call, never the caller's id). */
export class PendingCalls {
  /** Renewed every {@link RENEW_AFTER_ADDS} calls (`churn.ts`). */
  #calls = new Map<string, Entry>();
  #adds = 0;
  readonly #sendText: (text: string) => void;
  readonly #cancelGraceMs: number;
  readonly #newId: () => string;
  readonly #deadlines = new Deadlines<Entry>();
  readonly #output: OutputSettings | undefined;
  readonly #logger: Logger | undefined;
  /** Wire ids of calls ended here before the host answered, oldest first (at most {@link MAX_ENDED_HERE}). */
  readonly #endedHere = new Set<string>();

  /**
   * @param sendText sends one text frame to the host (a no-op when the socket is not open)
   * @param cancelGraceMs after a stop, how long to wait for the host's partial result before
   *   settling 130 anyway, ms (ToolwireServerOptions.cancelGraceMs, default 2000)
   * @param newId mints wire ids (ServerSeams.newCallId, a test seam; default {@link sequentialCallId})
   * @param output live output (protocol 2 sessions): the window, chunk limit and capture cap, and
   *   where consumer failures are logged; `undefined` (protocol 1): an `output` chunk is a fault
   */
  constructor(
    sendText: (text: string) => void,
    cancelGraceMs: number,
    newId: () => string = sequentialCallId,
    output?: { settings: OutputSettings; logger: Logger },
  ) {
    this.#sendText = sendText;
    this.#cancelGraceMs = cancelGraceMs;
    this.#newId = newId;
    this.#output = output?.settings;
    this.#logger = output?.logger;
  }

  /** Number of pending calls (including stopped calls waiting out their grace). */
  get size(): number {
    return this.#calls.size;
  }

  /**
   * Send a `call` frame for `call` to tool `tool` and settle it:
   * - the host's `result` → its capture (bytes decoded exactly);
   * - `deadlineMs` passes → 124 `deadline of N ms exceeded`, and `cancel {reason: 'deadline'}` is sent;
   * - `call.signal` aborts → `cancel {reason: 'stop'}` is sent; 130 `cancelled by stop` with the
   *   host's partial output if it answers within the grace, else 130 at the grace;
   * - input that JSON cannot encode → 65 at once, nothing sent;
   * - no wire id unique among the pending calls after {@link MAX_ID_DRAWS} draws → 70 at once,
   *   nothing sent (an id is never shared, so one result can never settle two calls).
   * The caller checks `signal.aborted`, limits and the socket state before calling.
   *
   * @param deadlineMs time allowed, ms (integer, 1 … 2^31 − 1); sent as `call.deadlineMs`
   */
  dispatch(tool: string, call: RoutedCall, deadlineMs: number): Promise<Capture> {
    const id = this.#freshId();
    if (id === undefined) {
      return Promise.resolve(failureCapture('host_error', `could not mint a call id unique among ${this.#calls.size} pending calls`));
    }
    let frame: string;
    try {
      // Protocol 2 (a v1 host refuses unknown keys): the call's own id and its trace context (issue 16).
      // Each shape is one object literal: no property added after it is made (no shape change per call).
      let message: CallMessage;
      if (this.#output === undefined) {
        message = { type: 'call', id, tool, input: call.input, workspace: call.workspace, agent: call.agent, deadlineMs };
      } else {
        message = { type: 'call', id, tool, input: call.input, workspace: call.workspace, agent: call.agent, deadlineMs, callId: call.id };
        if (call.traceparent !== undefined) message.traceparent = call.traceparent;
        if (call.tracestate !== undefined) message.tracestate = call.tracestate;
      }
      frame = encodeMessage(message);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return Promise.resolve(failureCapture('invalid_input', `input cannot be encoded as JSON: ${why}`));
    }
    call.wireId = id;
    // The frame goes out first: with one call in flight the host's answer waits on it, while the
    // bookkeeping below then overlaps the host's work. No answer can be read before this function
    // returns (frames are handled in later turns), and nothing here settles or fails the call.
    // Sent here, not in the promise's executor, so no closure of the pending call keeps the
    // encoded frame (as big as the input) alive until the call settles.
    this.#sendText(frame);
    let entry!: Entry;
    const settled = new Promise<Capture>((resolve) => {
      entry = new Entry(id, deadlineMs, this, call, resolve);
    });
    if (++this.#adds === RENEW_AFTER_ADDS) {
      this.#adds = 0;
      this.#calls = new Map(this.#calls);
    }
    this.#calls.set(id, entry);
    this.#deadlines.add(entry, deadlineMs);
    watchCall(call, entry);
    // Aborted after the caller's check (e.g. while the input was encoded): no listener will fire for it.
    if (isStopped(call)) this.stop(entry);
    return settled;
  }

  /**
   * Settle the call a `result` frame answers. Returns true when settled; false when `result.id` is
   * not pending here (unknown, already settled, or another session's) — the caller drops and logs
   * the frame; or, for a call that streamed, why `result.streamed` breaks the protocol (the caller
   * then fails the call 76 with {@link fail}).
   */
  resolve(result: ResultMessage): boolean | string {
    const entry = this.#calls.get(result.id);
    if (entry === undefined) return false;
    let stdout = fromWire(result.stdout, result.stdoutEncoding);
    let stderr = fromWire(result.stderr, result.stderrEncoding);
    if (entry.output !== undefined || result.streamed !== undefined) {
      // Live output: the capture is the chunks in `seq` order, then these bytes (DESIGN §5).
      const s = result.streamed;
      if (entry.output === undefined) {
        if (s!.stdout !== 0 || s!.stderr !== 0 || s!.chunks !== 0) return `result.streamed says ${JSON.stringify(s)}, but no output arrived`;
      } else {
        const fault = entry.output.finish(result, stdout, stderr);
        if (fault !== undefined) return fault;
        ({ stdout, stderr } = entry.output.part());
      }
    }
    if (entry.stopped) {
      entry.settle(stoppedCapture(stdout, stderr));
    } else {
      const capture: Capture = { stdout, stderr, exitCode: result.exitCode };
      if (result.failure !== undefined) capture.failure = result.failure;
      if (result.content !== undefined) capture.content = result.content;
      if (result.structured !== undefined) capture.structured = result.structured;
      entry.settle(capture);
    }
    return true;
  }

  /**
   * Take an `output` chunk (protocol 2) for its call. Returns true when taken; false when
   * `message.id` is not pending here (the caller drops and logs it); or why the chunk breaks the
   * protocol — out of order, too big, past the window, or on a protocol 1 session (the caller then
   * fails the call 76 with {@link fail}).
   */
  output(message: OutputFrame): boolean | string {
    const entry = this.#calls.get(message.id);
    if (entry === undefined) return false;
    if (this.#output === undefined) return 'output on a protocol 1 connection (the server offered no output window)';
    entry.output ??= new OutputStream(entry.id, this.#output, entry.listener, this.#sendText, this.#logger!);
    return entry.output.take(message) ?? true;
  }

  /**
   * Pass a `progress` message (protocol 2) to its call's consumer. True when the call is pending here
   * (passed on, or no consumer); false when not (the caller drops and logs it); on a protocol 1
   * session, why it breaks the protocol. A consumer that throws is logged; the call goes on.
   */
  progress(message: ProgressMessage): boolean | string {
    const entry = this.#calls.get(message.id);
    if (entry === undefined) return false;
    if (this.#output === undefined) return 'progress on a protocol 1 connection';
    const listener = entry.progressListener;
    if (listener === undefined) return true;
    try {
      listener(message.message);
    } catch (error) {
      // Logged once per call: a consumer that throws on every message must not flood the log.
      if (!entry.progressFailed) this.#logger!.warn({ id: entry.id, err: error }, 'progress consumer threw; the call goes on');
      entry.progressFailed = true;
    }
    return true;
  }

  /**
   * Settle pending call `id` with `failureCapture(failure, reason)` (e.g. 76 for a wrong-shape frame
   * naming it), keeping what it streamed. False when not pending.
   */
  fail(id: string, failure: Failure, reason: string): boolean {
    const entry = this.#calls.get(id);
    if (entry === undefined) return false;
    entry.settle(failureCapture(failure, reason, entry.part()));
    return true;
  }

  /**
   * Settle every pending call with `failureCapture(kind, reason)` (session ended: 69 or 76). Never
   * replayed. A call already stopped and waiting out its cancel grace settles 130 instead: the stop
   * stands, the host just will not answer it (DESIGN §6 "stop … even if the host never answers").
   */
  failAll(kind: Failure, reason: string): void {
    for (const entry of [...this.#calls.values()]) {
      const part = entry.part();
      entry.settle(entry.stopped ? failureCapture('cancelled', `${STOP_REASON}; ${reason}`, part) : failureCapture(kind, reason, part));
    }
    this.#deadlines.clear(); // no timer outlives the session
  }

  /** A wire id (1–128 characters) not pending here, or `undefined` when every draw collides. */
  #freshId(): string | undefined {
    for (let draw = 0; draw < MAX_ID_DRAWS; draw++) {
      const id = this.#newId();
      if (typeof id === 'string' && id.length > 0 && id.length <= 128 && !this.#calls.has(id)) return id;
    }
    return undefined;
  }

  /** For {@link Entry.settle}: remove `entry` (and its deadline); false when it is not pending here. */
  release(entry: Entry): boolean {
    if (this.#calls.get(entry.id) !== entry) return false;
    this.#calls.delete(entry.id);
    if (!entry.stopped) this.#deadlines.remove(entry, entry.deadlineMs);
    return true;
  }

  /** For {@link Entry.expire}: 124, and `cancel {reason: 'deadline'}` to the host. */
  expire(entry: Entry): void {
    if (this.#calls.get(entry.id) !== entry) return;
    entry.settle(failureCapture('deadline', `deadline of ${entry.deadlineMs} ms exceeded`, entry.part()));
    this.#endedBeforeAnswer(entry.id);
    this.#cancel(entry.id, 'deadline');
  }

  /**
   * Whether `id`, not pending here, names a call this session ended before its host answered (its
   * deadline, or a stop past the cancel grace): output the host sent before it saw the `cancel` is
   * expected then, not a fault of the host. A result is the host's last frame for a call: `last`
   * forgets `id`, so a frame after it counts as unknown again.
   */
  endedHere(id: string, last: boolean): boolean {
    if (!this.#endedHere.has(id)) return false;
    if (last) this.#endedHere.delete(id);
    return true;
  }

  #endedBeforeAnswer(id: string): void {
    if (this.#endedHere.size >= MAX_ENDED_HERE) this.#endedHere.delete(this.#endedHere.values().next().value!);
    this.#endedHere.add(id);
  }

  /** Add each pending call's output bytes received so far, by routed call, to `into` (calls that streamed nothing are left out). */
  outputBytes(into: Map<RoutedCall, number>): void {
    for (const entry of this.#calls.values()) if (entry.output !== undefined) into.set(entry.routed, entry.output.received);
  }

  /**
   * Stop the pending call that answers `call` (the status page's stop button) exactly as its signal
   * aborting would: `cancel {reason: 'stop'}` to the host, 130. False when it is not pending here.
   * O(pending calls): a stop is a rare, human action.
   */
  stopCall(call: RoutedCall): boolean {
    for (const entry of this.#calls.values()) {
      if (entry.routed !== call) continue;
      this.stop(entry);
      return true;
    }
    return false;
  }

  /** For {@link Entry.stop}: `cancel {reason: 'stop'}` to the host, 130 with its answer or at the grace. */
  stop(entry: Entry): void {
    if (this.#calls.get(entry.id) !== entry || entry.stopped) return;
    entry.stopped = true;
    this.#deadlines.remove(entry, entry.deadlineMs);
    this.#cancel(entry.id, 'stop');
    const grace = this.#cancelGraceMs;
    const late = (): void => {
      if (this.#calls.get(entry.id) !== entry) return;
      entry.settle(failureCapture('cancelled', `cancelled by stop; the host did not answer within ${grace} ms`, entry.part()));
      this.#endedBeforeAnswer(entry.id);
    };
    if (grace === 0) late();
    else entry.timer = setTimeout(late, grace);
  }

  #cancel(id: string, reason: 'stop' | 'deadline'): void {
    this.#sendText(encodeMessage({ type: 'cancel', id, reason }));
  }
}
