/**
 * The answer to a call past the tool host's bounds (75, failure `overloaded`; DESIGN §7 "What a
 * server can make a host do"), and the warning that tells the host's operator it refuses calls: at
 * most one every {@link WARN_EVERY_MS}, with the count since the last, so a burst cannot flood the log.
 */
import { type Capture, failureCapture } from '@toolwire/protocol';
import type { Logger } from '../types.js';
import type { Admission } from './admission.js';

/** Refused calls are logged at level warn at most once per this many ms (each one at level debug). */
const WARN_EVERY_MS = 10_000;

/** The refusals of one session. */
export class Refusals {
  readonly #admission: Admission;
  readonly #logger: Logger;
  #count = 0;
  #warnedAt = Number.NEGATIVE_INFINITY;

  constructor(admission: Admission, logger: Logger) {
    this.#admission = admission;
    this.#logger = logger;
  }

  /**
   * The capture of call `id`, refused because the queue is full or its `bytes` of input would pass
   * the bound: exit code 75, stderr ending `toolwire: tool host overloaded: <which bound>; retry later`.
   */
  refuse(id: string, why: 'queue_full' | 'input_bytes', bytes: number): Capture {
    const a = this.#admission;
    const { maxConcurrentCalls, maxQueuedCalls, maxInputBytes } = a.limits;
    const reason =
      why === 'queue_full'
        ? `tool host overloaded: ${a.running} calls running (maxConcurrentCalls ${maxConcurrentCalls}) and ${a.queued} waiting (maxQueuedCalls ${maxQueuedCalls}); retry later`
        : `tool host overloaded: a call of ${bytes} bytes would pass the ${maxInputBytes} bytes of call input held at once (maxInFlightInputBytes); retry later`;
    this.#logger.debug({ id, why }, 'toolwire: call refused, the host is at its bound');
    this.#count++;
    const now = performance.now();
    if (now - this.#warnedAt >= WARN_EVERY_MS) {
      this.#logger.warn({ refused: this.#count, running: a.running, queued: a.queued, bytes: a.bytes }, `toolwire: ${reason}`);
      this.#warnedAt = now;
      this.#count = 0;
    }
    return failureCapture('overloaded', reason);
  }
}
