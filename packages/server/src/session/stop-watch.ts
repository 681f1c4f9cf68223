/**
 * One `abort` listener per caller `AbortSignal`, shared by every pending call that carries it,
 * instead of one listener per call. An agent typically passes one stop signal for all the calls of
 * a run; `addEventListener` + `removeEventListener` per call cost a listener record (~300 B of
 * garbage) and two list walks each time (bench s1). Here a call joins its signal's set; the
 * listener, added at the signal's first call, stops every call still in the set when it fires.
 */

/** What a watched call does when its signal aborts. */
export interface Stoppable {
  stop(): void;
}

/** Calls still pending per signal. Weak: a signal nobody holds takes its set with it. */
const watchers = new WeakMap<AbortSignal, Set<Stoppable>>();

/** The listener of every watched signal (`this` is the signal, DOM `EventTarget` semantics). */
function onAbort(this: AbortSignal): void {
  const calls = watchers.get(this);
  if (calls === undefined) return;
  watchers.delete(this);
  for (const call of calls) {
    try {
      call.stop();
    } catch (error) {
      // As when each call had its own listener: reported as an uncaught error, the others still stop.
      process.nextTick(() => {
        throw error;
      });
    }
  }
}

/** Stop `call` when `signal` aborts (the signal must not be aborted yet). */
export function watchStop(signal: AbortSignal, call: Stoppable): void {
  let calls = watchers.get(signal);
  if (calls === undefined) {
    calls = new Set();
    watchers.set(signal, calls);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  calls.add(call);
}

/** `call` is settled: its signal no longer concerns it. The signal's listener stays for its next call. */
export function unwatchStop(signal: AbortSignal, call: Stoppable): void {
  watchers.get(signal)?.delete(call);
}
