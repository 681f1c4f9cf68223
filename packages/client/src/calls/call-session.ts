/**
 * The calls of one connection (DESIGN §5–§7): run each `call`, arm its deadline, abort it on
 * `cancel`, answer it with exactly one `result`. At a disconnect every call is aborted (work
 * killed) and nothing more is sent on that connection; calls are never replayed elsewhere.
 */
import { type CallMessage, type CancelMessage, type Capture, failureCapture } from '@toolwire/protocol';
import { runCommandTool } from '../subprocess/run-command.js';
import type { CommandSpec, Logger, ToolContext, ToolHandler } from '../types.js';
import { CallAbort, type CallAborted, cancelAbort, deadlineAbort } from './abort.js';
import { capCapture, captureCapBytes } from './capture-cap.js';
import { runHandler } from './in-process.js';
import { encodeResultFrame } from './result-frame.js';

/** A registered tool as the call layer runs it. */
export type RegisteredTool =
  | { kind: 'handler'; name: string; handler: ToolHandler }
  | { kind: 'command'; name: string; command: CommandSpec };

/** Host-wide settings a session runs calls with. Times in ms, sizes in bytes. */
export interface CallSettings {
  root: string;
  cancelGraceMs: number;
  drainMs: number;
  maxCaptureBytes: number;
  logger: Logger;
}

/** Largest delay `setTimeout` honours (2^31 − 1 ms); longer deadlines are clamped to it. */
const MAX_TIMER_MS = 2_147_483_647;

interface InFlight {
  abort: CallAbort;
  timer: NodeJS.Timeout;
  done: Promise<void>;
}

/**
 * The in-flight calls of one connection. Each call has exactly one owner (this session) and is
 * answered at most once; results of a session whose connection is gone are dropped.
 */
export class CallSession {
  readonly #send: (frame: string) => boolean;
  readonly #lookup: (name: string) => RegisteredTool | undefined;
  readonly #settings: CallSettings;
  readonly #maxPayload: number;
  readonly #capBytes: number;
  readonly #calls = new Map<string, InFlight>();
  #dead = false;

  /**
   * @param send sends one encoded `result` frame (its JSON text) on this session's connection; returns false when it is gone
   * @param maxPayload the server's `welcome.limits.maxPayload`, bytes
   */
  constructor(
    send: (frame: string) => boolean,
    maxPayload: number,
    lookup: (name: string) => RegisteredTool | undefined,
    settings: CallSettings,
  ) {
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
    const timer = setTimeout(() => abort.abort(deadlineAbort(deadlineMs)), Math.min(deadlineMs, MAX_TIMER_MS));
    const ctx: ToolContext = {
      id: call.id,
      agent: call.agent,
      workspace: call.workspace,
      deadlineMs,
      get signal() {
        return abort.signal; // made on first read (see CallAbort)
      },
    };
    const entry: InFlight = { abort, timer, done: Promise.resolve() };
    this.#calls.set(call.id, entry);
    entry.done = this.#run(tool, call.input, ctx, abort)
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

  async #run(tool: RegisteredTool, input: unknown, ctx: ToolContext, abort: CallAbort): Promise<Capture> {
    const { cancelGraceMs, drainMs, root } = this.#settings;
    let capture: Capture;
    try {
      capture =
        tool.kind === 'command'
          ? await runCommandTool(tool.command, input, ctx, { root, cancelGraceMs, drainMs, maxCaptureBytes: this.#capBytes })
          : capCapture(await runHandler(tool.handler, input, ctx, cancelGraceMs + drainMs, abort), this.#capBytes);
    } catch (error) {
      capture = failureCapture('host_error', `tool host failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const aborted = abort.reason;
    if (aborted !== undefined && capture.failure === undefined) {
      capture = failureCapture(aborted.failure, aborted.message, capture);
    }
    return capture;
  }

  #answer(id: string, capture: Capture): void {
    if (this.#dead) {
      this.#settings.logger.debug({ id }, 'toolwire: result dropped, its connection is gone');
      return;
    }
    if (!this.#send(encodeResultFrame(id, capture, this.#maxPayload))) {
      this.#settings.logger.debug({ id }, 'toolwire: result not sent, connection closed');
    }
  }
}
