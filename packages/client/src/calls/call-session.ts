/**
 * The calls of one connection (DESIGN §5–§7): admit each `call` (run it, queue it, or answer it 75:
 * `admission.ts`), arm its deadline, abort it on `cancel`, answer it with exactly one `result`
 * (after its live output, when the server takes it: `output-channel.ts`, which also takes `credit`). A
 * queued call whose deadline passes or that is cancelled is answered without its tool ever
 * starting. At a disconnect every call is aborted (work killed, queued calls dropped) and nothing
 * more is sent on that connection; calls are never replayed elsewhere.
 */
import { type CallMessage, type CancelMessage, type Capture, type CreditMessage, type WelcomeOutput, failureCapture } from '@toolwire/protocol';
import type { RunSettings, RunStart, SourceTool } from '../sources/source.js';
import type { EnvPolicy } from '../subprocess/tool-env.js';
import type { Logger } from '../types.js';
import { CallAbort, type CallAborted, armDeadline, cancelAbort, withAbort } from './abort.js';
import type { Admission, Waiter } from './admission.js';
import { Refusals } from './overload.js';
import { capCapture, captureCapBytes } from './capture-cap.js';
import { handlerOutputToCapture } from './in-process.js';
import { type FrameSender, OutputChannel } from './output-channel.js';
import { type Streamed, encodeResultFrame, encodeTextResultFrame } from './result-frame.js';
import { CallContext } from './tool-context.js';
import { HostCall } from './call-trace.js';
import { hostFailed, hostFailedReason, notServed } from './answers.js';
import type { HostMetrics } from '../host/host-metrics.js';

/** Host-wide settings a session runs calls with. Times in ms, sizes in bytes. */
export interface CallSettings {
  root: string;
  cancelGraceMs: number;
  drainMs: number;
  maxCaptureBytes: number;
  /** Spawn subprocess tools from the spawn helper (`RunCommandOptions.spawnHelper`). */
  spawnHelper: boolean;
  /** How subprocess tools' environments are built (`RunCommandOptions.env`). */
  env: EnvPolicy;
  /** The host's bounds on what runs and waits (one per host, shared by its sessions). */
  admission: Admission;
  logger: Logger;
  /** Where answered calls are counted (`ToolHostOptions.metrics`); none when absent. */
  metrics?: HostMetrics | undefined;
  /** Why a tool that is not served now was withdrawn (`ToolSet.withdrawn`): its calls are answered 69 with it, not 127. */
  withdrawn?: (name: string) => string | undefined;
}

interface InFlight {
  abort: CallAbort;
  done: Promise<void>;
}

/** An admitted call's share of the host's bounds: its tool's own bound (`Infinity`: none) and its input bytes. */
interface Slot {
  limit: number;
  bytes: number;
}

/** What a queued call already has when it starts: its deadline (a `performance.now()` time) runs from its arrival. */
interface Waited {
  abort: CallAbort;
  entry: InFlight;
  timer: NodeJS.Timeout;
  deadlineAt: number;
}

const SETTLED = Promise.resolve();

/**
 * The in-flight calls of one connection. Each call has exactly one owner (this session) and is
 * answered at most once; results of a session whose connection is gone are dropped.
 */
export class CallSession {
  readonly #send: FrameSender;
  readonly #lookup: (name: string) => SourceTool | undefined;
  readonly #settings: CallSettings;
  readonly #run: RunSettings;
  readonly #maxPayload: number;
  readonly #capBytes: number;
  readonly #calls = new Map<string, InFlight>();
  #dead = false;
  readonly #refusals: Refusals;
  readonly #output: OutputChannel;
  /** Protocol 1: MCP `content`/`structured` are dropped from results (their text is on stdout). */
  readonly #plain: boolean;

  /**
   * @param send sends one encoded frame (JSON text, or a binary `output` frame) on this session's connection; returns false when it is gone
   * @param maxPayload the server's `welcome.limits.maxPayload`, bytes
   * @param offer the server's `welcome.output` (protocol 2: it takes live output); `undefined`: every call's output travels in its result
   * @param protocol the connection's protocol version: below 2, results carry no MCP `content`/`structured`
   */
  constructor(send: FrameSender, maxPayload: number, lookup: (name: string) => SourceTool | undefined, settings: CallSettings, offer?: WelcomeOutput, protocol = 2) {
    this.#plain = protocol < 2;
    this.#send = send;
    this.#maxPayload = maxPayload;
    this.#lookup = lookup;
    this.#settings = settings;
    this.#capBytes = captureCapBytes(maxPayload, settings.maxCaptureBytes);
    const { root, cancelGraceMs, drainMs, spawnHelper, env } = settings;
    this.#run = { root, cancelGraceMs, drainMs, capBytes: this.#capBytes, spawnHelper, env };
    this.#refusals = new Refusals(settings.admission, settings.logger);
    // Nothing of a call goes out once the connection is given up (its calls are being aborted).
    this.#output = new OutputChannel((frame, sent) => !this.#dead && send(frame, sent), offer, maxPayload, this.#capBytes, settings.logger);
  }

  /** Calls running or waiting to run (including aborted ones that are still dying). */
  get size(): number {
    return this.#calls.size;
  }

  /**
   * Run one call, or queue it when the host is at its bound (see {@link Admission}). A tool that is
   * not registered is answered 127 without running anything (69 with the reason when its source
   * withdrew it, e.g. its MCP server died while the call was on its way); a call past the queue or input-bytes
   * bound is answered 75 at once and never started.
   * @param bytes the size of the `call` frame that carried it (its input's share of the bound)
   */
  dispatch(call: CallMessage, bytes = 0): void {
    if (this.#dead) return;
    if (this.#calls.has(call.id)) {
      this.#settings.logger.warn({ id: call.id }, 'toolwire: duplicate call id ignored');
      return;
    }
    const tool = this.#lookup(call.tool);
    if (!tool) {
      const answer = notServed(call.tool, this.#settings.withdrawn?.(call.tool));
      this.#answer(call.id, answer);
      new HostCall(call).ended(this.#settings.logger, answer.exitCode, this.#settings.metrics, false);
      return;
    }
    const limit = tool.maxConcurrency ?? Number.POSITIVE_INFINITY;
    const admitted = this.#settings.admission.admit(tool.name, limit, bytes);
    if (admitted === 'run') this.#start(call, tool, { limit, bytes }, undefined);
    else if (admitted === 'queue') this.#wait(call, tool, { limit, bytes });
    else {
      const refused = this.#refusals.refuse(call.id, admitted, bytes); // nothing of it runs
      this.#answer(call.id, refused);
      new HostCall(call).ended(this.#settings.logger, refused.exitCode, this.#settings.metrics);
    }
  }

  /**
   * Run an admitted call (counted as running until it is answered). `waited`: it was queued, and
   * its abort, deadline timer and entry already exist.
   */
  #start(call: CallMessage, tool: SourceTool, slot: Slot, waited: Waited | undefined): void {
    const fullMs = Math.min(call.deadlineMs, tool.timeoutMs ?? Number.POSITIVE_INFINITY);
    // A call that waited gets what is left of its deadline (at least 1 ms: its timer has not fired yet).
    const deadlineMs = waited ? Math.max(1, Math.ceil(waited.deadlineAt - performance.now())) : fullMs;
    const abort = waited?.abort ?? new CallAbort();
    const observed = new HostCall(call);
    const ctx = new CallContext(observed.id, call.agent, call.workspace, deadlineMs, abort, this.#output, observed);
    // Not in `#calls` while the source starts the call: nothing (no cancel, no end of the session)
    // can reach the call before it returns, and an answer known at once then needs no entry.
    const started = this.#begin(tool, call.input, ctx, abort);
    if (!('work' in started)) {
      if (waited) {
        clearTimeout(waited.timer);
        this.#calls.delete(call.id);
      }
      observed.ended(this.#settings.logger, this.#answerAtOnce(call.id, started, abort, ctx), this.#settings.metrics);
      this.#settings.admission.finish(tool.name, slot.limit, slot.bytes);
      return;
    }
    const id = call.id; // the closures below hold the id, not the call and its input
    const entry: InFlight = waited?.entry ?? { abort, done: SETTLED };
    this.#calls.set(id, entry);
    const timer = waited?.timer ?? armDeadline(abort, fullMs);
    entry.done = this.#settle(started.work, ctx, abort)
      .then((capture) => {
        clearTimeout(timer);
        this.#calls.delete(id);
        this.#settings.admission.finish(tool.name, slot.limit, slot.bytes);
        this.#answer(id, capture, ctx.output?.streamed);
        observed.ended(this.#settings.logger, capture.exitCode, this.#settings.metrics);
      })
      .catch((error: unknown) => this.#settings.logger.error({ err: error, id }, 'toolwire: could not answer a call'));
  }

  /**
   * A handler that returned at once: answered within this frame, with no deadline timer (none
   * could have fired while it ran) and no promise hops — the same capture the async path builds.
   */
  #answerAtOnce(id: string, started: Exclude<RunStart, { work: unknown }>, abort: CallAbort, ctx: CallContext): number {
    try {
      const output = ctx.output; // the handler wrote (or reported progress) before it returned
      if ('text' in started && output === undefined) {
        // A string output: its frame is made from the string itself when no byte is needed.
        const frame = abort.aborted ? undefined : encodeTextResultFrame(id, started.text, this.#capBytes, this.#maxPayload);
        if (frame !== undefined) {
          this.#answerFrame(id, frame);
          return 0;
        }
      }
      let capture: Capture;
      try {
        const returned = 'text' in started ? handlerOutputToCapture(started.text) : started.capture;
        capture = output === undefined ? capCapture(returned, this.#capBytes) : output.close(returned);
      } catch (error) {
        capture = hostFailed(error);
      }
      const answered = withAbort(capture, abort, output);
      this.#answer(id, answered, output?.streamed);
      return answered.exitCode;
    } catch (error) {
      this.#settings.logger.error({ err: error, id }, 'toolwire: could not answer a call');
      return 70;
    }
  }

  /**
   * Queue an admitted call until it may run. Its deadline runs from now; a deadline, a cancel or
   * the end of the connection while it waits answers it with the abort's capture (124, 130; none
   * on a lost connection) and its tool is never started.
   */
  #wait(call: CallMessage, tool: SourceTool, slot: Slot): void {
    const fullMs = Math.min(call.deadlineMs, tool.timeoutMs ?? Number.POSITIVE_INFINITY);
    const abort = new CallAbort();
    let leave!: () => void;
    const entry: InFlight = { abort, done: new Promise<void>((resolve) => (leave = resolve)) };
    this.#calls.set(call.id, entry);
    const timer = armDeadline(abort, fullMs);
    const waited: Waited = { abort, entry, timer, deadlineAt: performance.now() + fullMs };
    const waiter: Waiter = {
      tool: tool.name,
      limit: slot.limit,
      bytes: slot.bytes,
      start: () => {
        abort.onAbort(undefined);
        leave(); // `idle()` reads the entry's new `done` next
        try {
          this.#start(call, tool, slot, waited);
        } catch (error) {
          clearTimeout(timer);
          this.#calls.delete(call.id);
          this.#settings.admission.finish(tool.name, slot.limit, slot.bytes);
          this.#answer(call.id, hostFailed(error));
        }
      },
    };
    abort.onAbort(() => {
      this.#settings.admission.withdraw(waiter);
      clearTimeout(timer);
      this.#calls.delete(call.id);
      leave();
      const reason = abort.reason!;
      const capture = failureCapture(reason.failure, `${reason.message}; the call was waiting for a place to run and its tool was not started`);
      this.#answer(call.id, capture);
      new HostCall(call).ended(this.#settings.logger, capture.exitCode, this.#settings.metrics);
    });
    this.#settings.admission.enqueue(waiter);
  }

  /** The server's `credit` for a streaming call (protocol 2). Unknown or finished ids are ignored. */
  credit(message: CreditMessage): void {
    if (!this.#dead) this.#output.credit(message);
  }

  /** Abort one call for a `cancel` frame (`stop` → 130, `deadline` → 124). Unknown ids are ignored. */
  cancel(message: CancelMessage): void {
    const entry = this.#calls.get(message.id);
    if (!entry) {
      this.#settings.logger.debug({ id: message.id }, 'toolwire: cancel for an unknown or finished call');
      return;
    }
    entry.abort.abort(cancelAbort(message.reason));
  }

  /** The connection is gone: abort every call with `reason`; no result is sent from now on. */
  abortAll(reason: CallAborted): void {
    this.#dead = true;
    for (const entry of this.#calls.values()) entry.abort.abort(reason);
  }

  /** Resolves when every call of this session has ended (killed work included). */
  async idle(): Promise<void> {
    while (this.#calls.size > 0) await Promise.all([...this.#calls.values()].map((e) => e.done));
  }

  /** Hand the call to its tool's source; a throw (a source's bug) is answered 70. */
  #begin(tool: SourceTool, input: unknown, ctx: CallContext, abort: CallAbort): RunStart {
    try {
      return tool.source.run(tool, input, { ctx, abort, settings: this.#run });
    } catch (error) {
      return { capture: hostFailed(error) };
    }
  }

  /** The work's capture, with the abort's outcome (130/124) when the call was aborted; never rejects. */
  #settle(work: Promise<Capture>, ctx: CallContext, abort: CallAbort): Promise<Capture> {
    return work.then(
      (capture) => withAbort(capture, abort, ctx.output),
      (error: unknown) => withAbort(ctx.fail('host_error', hostFailedReason(error)), abort, ctx.output),
    );
  }

  /** `streamed`: what the call sent in `output` chunks (its result then carries only the rest). */
  #answer(id: string, capture: Capture, streamed?: Streamed): void {
    if (this.#dead) {
      this.#settings.logger.debug({ id }, 'toolwire: result dropped, its connection is gone');
      return;
    }
    if (this.#plain && (capture.content !== undefined || capture.structured !== undefined)) {
      const plain: Capture = { ...capture };
      delete plain.content;
      delete plain.structured;
      capture = plain;
    }
    this.#answerFrame(id, encodeResultFrame(id, capture, this.#maxPayload, streamed));
  }

  #answerFrame(id: string, frame: string): void {
    if (this.#dead) {
      this.#settings.logger.debug({ id }, 'toolwire: result dropped, its connection is gone');
      return;
    }
    if (!this.#send(frame)) {
      this.#settings.logger.debug({ id }, 'toolwire: result not sent, connection closed');
    }
  }
}
