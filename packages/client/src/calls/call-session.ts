/**
 * The calls of one connection (DESIGN §5–§7): run each `call`, arm its deadline, abort it on
 * `cancel`, answer it with exactly one `result`. At a disconnect every call is aborted (work
 * killed) and nothing more is sent on that connection; calls are never replayed elsewhere.
 */
import { type CallMessage, type CancelMessage, type Capture, failureCapture } from '@toolwire/protocol';
import { runCommandTool } from '../subprocess/run-command.js';
import type { EnvPolicy } from '../subprocess/tool-env.js';
import type { CommandSpec, Logger, ToolContext, ToolHandler } from '../types.js';
import { CallAbort, type CallAborted, cancelAbort, deadlineAbort } from './abort.js';
import { capCapture, captureCapBytes } from './capture-cap.js';
import { awaitHandler, handlerOutputToCapture, startHandler } from './in-process.js';
import { encodeResultFrame, encodeTextResultFrame } from './result-frame.js';

/** A registered tool as the call layer runs it. */
export type RunnableTool = { kind: 'handler'; name: string; handler: ToolHandler } | { kind: 'command'; name: string; command: CommandSpec };

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
  logger: Logger;
}

/** Largest delay `setTimeout` honours (2^31 − 1 ms); longer deadlines are clamped to it. */
const MAX_TIMER_MS = 2_147_483_647;

interface InFlight {
  abort: CallAbort;
  done: Promise<void>;
}

const SETTLED = Promise.resolve();

/** The capture of a call whose tool host code threw while building it (70). */
function hostFailed(error: unknown): Capture {
  return failureCapture('host_error', `tool host failed: ${error instanceof Error ? error.message : String(error)}`);
}

/** An aborted call's capture: the abort's failure and reason, keeping the partial output, unless the tool already set a failure. */
function withAbort(capture: Capture, abort: CallAbort): Capture {
  const aborted = abort.reason;
  return aborted !== undefined && capture.failure === undefined ? failureCapture(aborted.failure, aborted.message, capture) : capture;
}

/**
 * The `ctx` a tool sees. Made here, not inline in `dispatch`: its `signal` getter is a closure, and a
 * closure made in `dispatch` shares that function's context — which holds the whole call message
 * (its input) for the other closures there, so recent inputs survived young-generation GCs and were
 * promoted. This getter captures only `abort` (bench/README.md item 9).
 */
function toolContext(call: CallMessage, deadlineMs: number, abort: CallAbort): ToolContext {
  return {
    id: call.id,
    agent: call.agent,
    workspace: call.workspace,
    deadlineMs,
    get signal() {
      return abort.signal; // made on first read (see CallAbort)
    },
  };
}

/**
 * The in-flight calls of one connection. Each call has exactly one owner (this session) and is
 * answered at most once; results of a session whose connection is gone are dropped.
 */
export class CallSession {
  readonly #send: (frame: string) => boolean;
  readonly #lookup: (name: string) => RunnableTool | undefined;
  readonly #settings: CallSettings;
  readonly #maxPayload: number;
  readonly #capBytes: number;
  readonly #calls = new Map<string, InFlight>();
  #dead = false;

  /**
   * @param send sends one encoded `result` frame (its JSON text) on this session's connection; returns false when it is gone
   * @param maxPayload the server's `welcome.limits.maxPayload`, bytes
   */
  constructor(send: (frame: string) => boolean, maxPayload: number, lookup: (name: string) => RunnableTool | undefined, settings: CallSettings) {
    this.#send = send;
    this.#maxPayload = maxPayload;
    this.#lookup = lookup;
    this.#settings = settings;
    this.#capBytes = captureCapBytes(maxPayload, settings.maxCaptureBytes);
  }

  /** Calls still running (including aborted ones that are still dying). */
  get size(): number {
    return this.#calls.size;
  }

  /** Run one call. A tool that is not registered is answered 127 without running anything. */
  dispatch(call: CallMessage): void {
    if (this.#dead) return;
    if (this.#calls.has(call.id)) {
      this.#settings.logger.warn({ id: call.id }, 'toolwire: duplicate call id ignored');
      return;
    }
    const tool = this.#lookup(call.tool);
    if (!tool) {
      this.#answer(call.id, failureCapture('not_found', `no such tool ${JSON.stringify(call.tool)} on this host`));
      return;
    }
    const own = tool.kind === 'command' ? tool.command.timeoutMs : undefined;
    const deadlineMs = Math.min(call.deadlineMs, own ?? Number.POSITIVE_INFINITY);
    const abort = new CallAbort();
    const ctx = toolContext(call, deadlineMs, abort);
    let pending: unknown;
    if (tool.kind === 'handler') {
      // Not in `#calls` while the handler runs synchronously: nothing (no cancel, no end of the
      // session) can reach the call before it returns, and a synchronous answer then needs no entry.
      const started = startHandler(tool.handler, call.input, ctx, abort);
      if ('text' in started) {
        // A string output: its frame is made from the string itself when no byte is needed.
        const frame = abort.aborted ? undefined : encodeTextResultFrame(call.id, started.text, this.#capBytes, this.#maxPayload);
        if (frame !== undefined) {
          try {
            this.#answerFrame(call.id, frame);
          } catch (error) {
            this.#settings.logger.error({ err: error, id: call.id }, 'toolwire: could not answer a call');
          }
          return;
        }
      }
      if (!('pending' in started)) {
        // The handler returned at once: answered within this frame, with no deadline timer (none
        // could have fired while it ran) and no promise hops — the same capture the async path builds.
        let capture: Capture;
        try {
          capture = capCapture('text' in started ? handlerOutputToCapture(started.text) : started.capture, this.#capBytes);
        } catch (error) {
          capture = hostFailed(error);
        }
        try {
          this.#answer(call.id, withAbort(capture, abort));
        } catch (error) {
          this.#settings.logger.error({ err: error, id: call.id }, 'toolwire: could not answer a call');
        }
        return;
      }
      pending = started.pending;
    }
    const entry: InFlight = { abort, done: SETTLED };
    this.#calls.set(call.id, entry);
    const timer = setTimeout(() => abort.abort(deadlineAbort(deadlineMs)), Math.min(deadlineMs, MAX_TIMER_MS));
    entry.done = this.#run(tool, call.input, ctx, abort, pending)
      .then((capture) => {
        clearTimeout(timer);
        this.#calls.delete(call.id);
        this.#answer(call.id, capture);
      })
      .catch((error: unknown) => this.#settings.logger.error({ err: error, id: call.id }, 'toolwire: could not answer a call'));
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

  /** `pending`: what a handler tool's handler returned (a thenable; see `startHandler`). */
  async #run(tool: RunnableTool, input: unknown, ctx: ToolContext, abort: CallAbort, pending: unknown): Promise<Capture> {
    const { cancelGraceMs, drainMs, root, spawnHelper, env } = this.#settings;
    let capture: Capture;
    try {
      capture =
        tool.kind === 'command'
          ? await runCommandTool(tool.command, input, ctx, { root, cancelGraceMs, drainMs, maxCaptureBytes: this.#capBytes, spawnHelper, env })
          : capCapture(await awaitHandler(pending, cancelGraceMs + drainMs, abort), this.#capBytes);
    } catch (error) {
      capture = hostFailed(error);
    }
    return withAbort(capture, abort);
  }

  #answer(id: string, capture: Capture): void {
    if (this.#dead) {
      this.#settings.logger.debug({ id }, 'toolwire: result dropped, its connection is gone');
      return;
    }
    this.#answerFrame(id, encodeResultFrame(id, capture, this.#maxPayload));
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
