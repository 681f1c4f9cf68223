/**
 * Whether a new call may be sent to a host now (DESIGN §6 backpressure) and with which deadline.
 * Refusals are synthetic captures, settled at once.
 */
import { type Capture, failureCapture } from '@toolwire/protocol';

/** Largest value `setTimeout` honours, ms (2^31 − 1); longer deadlines are clamped to it. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Normalise a call's deadline: `fallback` when absent or NaN; integer ms in 0 … 2^31 − 1. */
export function normalizeDeadline(requested: number | undefined, fallback: number): number {
  const ms = typeof requested === 'number' && !Number.isNaN(requested) ? requested : fallback;
  return Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS);
}

/** What admission looks at. Counts in calls, sizes in bytes. */
export interface Load {
  host: string;
  inFlight: number;
  maxInFlight: number;
  /** ws `bufferedAmount`: bytes queued on the socket and not yet written. */
  buffered: number;
  maxBuffered: number;
}

/**
 * `undefined` when a call may be sent; else a 75 (`overloaded`) capture: `inFlight` has reached
 * `maxInFlight` (ToolwireServerOptions.maxInFlightPerHost), or `buffered` exceeds `maxBuffered`
 * (ToolwireServerOptions.maxBufferedBytesPerHost).
 */
export function refuseOverload(load: Load): Capture | undefined {
  if (load.inFlight >= load.maxInFlight) {
    return failureCapture('overloaded', `host ${load.host} is overloaded: ${load.inFlight} calls in flight (limit ${load.maxInFlight}); retry later`);
  }
  if (load.buffered > load.maxBuffered) {
    return failureCapture('overloaded', `host ${load.host} is overloaded: ${load.buffered} bytes buffered (limit ${load.maxBuffered}); retry later`);
  }
  return undefined;
}
