/**
 * The `ctx` an in-process tool gets (DESIGN §7 "In-process tools"): the call's facts, its abort
 * signal (made on first read), and `write`/`progress` into the call's output, which is opened on
 * the first of them: a handler that writes nothing costs no output object.
 */
import { type Capture, type Failure, failureCapture } from '@toolwire/protocol';
import type { ToolContext } from '../types.js';
import type { CallAbort } from './abort.js';
import type { Failing } from './in-process.js';
import type { OutputChannel } from './output-channel.js';
import type { CallOutput } from './output-sink.js';
import { TOOL_STARTED, type ToolStartedListener } from '../subprocess/run-command.js';

const STREAMS: ReadonlySet<string> = new Set(['stdout', 'stderr']);

/**
 * A call's context. A class, not a literal made in the call session: its methods live on the
 * prototype and its fields hold only the call's facts, the abort and the channel — a closure made
 * in the session's methods would share their context, and with it the call message and its whole
 * input, for as long as the call runs.
 */
export class CallContext implements ToolContext, Failing, ToolStartedListener {
  readonly id: string;
  readonly agent: string;
  readonly workspace: string;
  readonly deadlineMs: number;
  readonly traceparent?: string;
  readonly tracestate?: string;
  /** The connection's id of the call (the `call` frame's `id`): what its output chunks name. */
  readonly #wire: string;
  readonly #abort: CallAbort;
  readonly #channel: OutputChannel;
  /** Told the pid of the call's subprocess tool (the host's call line), when there is one. */
  readonly #observer: { toolStarted?(pid: number): void } | undefined;
  #output: CallOutput | undefined;

  /** @param wire the call's wire id and trace context (issue 16); default: `id`, none */
  constructor(
    id: string,
    agent: string,
    workspace: string,
    deadlineMs: number,
    abort: CallAbort,
    channel: OutputChannel,
    wire?: { wire: string; traceparent: string | undefined; tracestate: string | undefined; toolStarted?(pid: number): void },
  ) {
    this.id = id;
    this.#wire = wire?.wire ?? id;
    if (wire?.traceparent !== undefined) this.traceparent = wire.traceparent;
    if (wire?.tracestate !== undefined) this.tracestate = wire.tracestate;
    this.agent = agent;
    this.workspace = workspace;
    this.deadlineMs = deadlineMs;
    this.#abort = abort;
    this.#channel = channel;
    this.#observer = wire; // called as a method when a tool starts: no bound function per call
  }

  /** Its subprocess tool started as process `pid` (`run-command.ts`). */
  [TOOL_STARTED](pid: number): void {
    this.#observer?.toolStarted?.(pid);
  }

  get signal(): AbortSignal {
    return this.#abort.signal; // made on first read (see CallAbort)
  }

  /** The call's output, if the tool wrote or reported progress (or the call layer opened it). */
  get output(): CallOutput | undefined {
    return this.#output;
  }

  /** The call's output, opened now if it is not yet (ending at once when the call was aborted). */
  openOutput(): CallOutput {
    if (this.#output === undefined) {
      this.#output = this.#channel.open(this.#wire);
      if (this.#abort.aborted) this.#output.end();
    }
    return this.#output;
  }

  write(stream: 'stdout' | 'stderr', data: Uint8Array | string): Promise<void> {
    if (typeof stream !== 'string' || !STREAMS.has(stream)) throw new TypeError(`ctx.write: stream must be "stdout" or "stderr", got ${String(stream)}`);
    let bytes: Uint8Array;
    if (typeof data === 'string') bytes = Buffer.from(data, 'utf8');
    else if (data instanceof Uint8Array)
      bytes = Uint8Array.prototype.slice.call(data); // a copy: the caller may reuse its buffer
    else throw new TypeError('ctx.write: data must be a string or a Uint8Array');
    const output = this.openOutput();
    if (output.blocked) throw new RangeError('ctx.write: an earlier write still waits for the window; await each ctx.write before the next');
    return output.write(stream, bytes);
  }

  progress(message?: string): void {
    if (message !== undefined && typeof message !== 'string') throw new TypeError('ctx.progress: message must be a string or undefined');
    this.openOutput().progress(message);
  }

  /** The call was aborted: its output stops waiting for the window. */
  aborted(): void {
    this.#output?.end();
  }

  /** A synthetic capture (70, 124, 130) after what the tool wrote, if anything. */
  fail(failure: Failure, reason: string): Capture {
    return this.#output === undefined ? failureCapture(failure, reason) : this.#output.fail(failure, reason);
  }
}
