/**
 * Why a call's work was aborted. The reason travels as the `AbortSignal`'s `reason` so every layer
 * (subprocess runner, in-process handler, result builder) derives the same synthetic capture.
 */
import type { Failure } from '@toolwire/protocol';

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
  return reason === 'stop'
    ? new CallAborted('cancelled', 'cancelled by stop')
    : new CallAborted('deadline', 'deadline reached on the server');
}

/** The deadline abort: `deadline of <ms> ms exceeded` (failure `deadline`, 124). */
export function deadlineAbort(deadlineMs: number): CallAborted {
  return new CallAborted('deadline', `deadline of ${deadlineMs} ms exceeded`);
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
