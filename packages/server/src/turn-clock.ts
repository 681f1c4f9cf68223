/**
 * The wall clock as the executor reads it for a call's start and end (ms since the epoch): a
 * `Date.now()` reading is reused by the reads that follow it until the microtasks already queued when
 * it was taken have run, and never past the current turn of the event loop (no I/O or timer runs in
 * between). Calls that settle together (the answers of one socket read) then share one clock reading
 * instead of making one each; a lone call reads the clock as before. A clock read costs ~70–100 ns on
 * the VMs measured (bench/README.md); nginx keeps its time per event-loop iteration for the same reason.
 *
 * Not for deadlines or anything that waits: those use `performance.now()` (monotonic).
 */

let cached: number | undefined;
const forget = (): void => {
  cached = undefined;
};

/** `Date.now()`, or the reading taken earlier in this run of the microtask queue (see above). */
export function turnNow(): number {
  if (cached === undefined) {
    cached = Date.now();
    queueMicrotask(forget);
  }
  return cached;
}
