/**
 * Why a call's work was aborted. The reason travels as the `AbortSignal`'s `reason` so every layer
 * (subprocess runner, in-process handler, result builder) derives the same synthetic capture.
 */
import { type Capture, type Failure, failureCapture } from '@toolwire/protocol';

/** The failure kinds an abort can end in: `cancelled` → 130, `deadline` → 124, `unavailable` → 69. */
export type AbortFailure = Extract<Failure, 'cancelled' | 'deadline' | 'unavailable'>;

/**
 * The abort reason the tool host puts on `ToolContext.signal`.
 *
 * @example controller.abort(new CallAborted('deadline', 'deadline of 500 ms exceeded'))
 */
export class CallAborted extends Error {
  override readonly name = 'CallAborted';
  /** @param failure the capture's failure kind @param message the `toolwire: <reason>` text */
  constructor(
    readonly failure: AbortFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The reason text of a `cancel` frame: `stop` → `cancelled by stop`, `deadline` → `cancelled: deadline reached on the server`. */
export function cancelAbort(reason: 'stop' | 'deadline'): CallAborted {
  return reason === 'stop' ? new CallAborted('cancelled', 'cancelled by stop') : new CallAborted('deadline', 'deadline reached on the server');
}

/** The deadline abort: `deadline of <ms> ms exceeded` (failure `deadline`, 124). */
export function deadlineAbort(deadlineMs: number): CallAborted {
  return new CallAborted('deadline', `deadline of ${deadlineMs} ms exceeded`);
}

/** Largest delay `setTimeout` honours (2^31 − 1 ms); longer deadlines are clamped to it. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Arm a call's deadline: `abort` fires with {@link deadlineAbort} after `deadlineMs` (clamped to
 * 2^31 − 1). A function of its own so the timer's closure holds only `abort`: a closure made in the
 * call session's methods would share their context, and with it the call message and its whole
 * input, for as long as the call runs.
 */
export function armDeadline(abort: CallAbort, deadlineMs: number): NodeJS.Timeout {
  return setTimeout(() => abort.abort(deadlineAbort(deadlineMs)), Math.min(deadlineMs, MAX_TIMER_MS));
}

/**
 * An aborted call's capture: the abort's failure and reason, keeping the partial output, unless the
 * tool already set a failure. `output`: the call's output, when `capture` holds only what was not
 * streamed (the reason line then gets the line break the whole stream needs).
 */
export function withAbort(capture: Capture, abort: CallAbort, output?: { beforeReason(stderr: Uint8Array): Uint8Array }): Capture {
  const aborted = abort.reason;
  if (aborted === undefined || capture.failure !== undefined) return capture;
  const partial = output === undefined ? capture : { stdout: capture.stdout, stderr: output.beforeReason(capture.stderr) };
  return failureCapture(aborted.failure, aborted.message, partial);
}

/**
 * The failure kind and reason of an aborted signal. A reason that is not a {@link CallAborted}
 * (e.g. a caller's own `AbortController.abort()`) counts as `cancelled`.
 */
export function describeAbort(signal: AbortSignal): { failure: AbortFailure; reason: string } {
  const r: unknown = signal.reason;
  if (r instanceof CallAborted) return { failure: r.failure, reason: r.message };
  return { failure: 'cancelled', reason: 'cancelled' };
}

/**
 * The abort of one call, owned by its session. `signal` (what a tool sees as `ctx.signal`) is made
 * only when first read: creating an `AbortSignal` costs more than the rest of an in-process call
 * (bench/README.md item 1), and most tools never look at it. Every abort goes through {@link abort},
 * so {@link aborted} and {@link reason} always agree with `signal`.
 */
export class CallAbort {
  readonly #controller = new AbortController();
  #reason: CallAborted | undefined;
  #listener: (() => void) | undefined;

  /** The call's `AbortSignal`, created on first use; aborted with the {@link CallAborted} reason. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True once {@link abort} was called. */
  get aborted(): boolean {
    return this.#reason !== undefined;
  }

  /** The failure kind and reason of the abort (as `describeAbort(signal)`); only when {@link aborted}. */
  get reason(): CallAborted | undefined {
    return this.#reason;
  }

  /** Abort once: `signal` fires its `abort` listeners, then the {@link onAbort} listener runs. Later calls do nothing. */
  abort(reason: CallAborted): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller.abort(reason);
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.();
  }

  /**
   * Run `listener` once at the abort, or at once when already aborted (the one listener of the
   * call's owner; a later one replaces it, `undefined` removes it).
   */
  onAbort(listener: (() => void) | undefined): void {
    if (listener !== undefined && this.#reason !== undefined) {
      this.#listener = undefined;
      listener();
      return;
    }
    this.#listener = listener;
  }
}
