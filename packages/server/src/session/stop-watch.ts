/**
 * One `abort` listener per caller `AbortSignal`, shared by every pending call that carries it,
 * instead of one listener per call. An agent typically passes one stop signal for all the calls of
 * a run; `addEventListener` + `removeEventListener` per call left a listener record as garbage and
 * cost two list walks each time (bench/README.md item 18). Here a call joins its signal's set; the
 * listener, added at the signal's first call, stops every call still in the set when it fires.
 *
 * A signal whose calls have all settled is let go one turn of the event loop later (its listener
 * removed) unless a new call joined meanwhile — the next call of a sequential caller does, in the
 * same turn. Letting go matters: Node keeps an `AbortSignal.any()` or `AbortSignal.timeout()`
 * signal alive while it has an `abort` listener, and the executor makes one such signal per call.
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

/** Stop `call` when `signal` aborts (the caller checks `signal.aborted` again after this). */
export function watchStop(signal: AbortSignal, call: Stoppable): void {
  let calls = watchers.get(signal);
  if (calls === undefined) {
    calls = new Set();
    watchers.set(signal, calls);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  calls.add(call);
}

/** Signals whose last call settled in this turn; checked by {@link release}. */
const emptied = new Set<AbortSignal>();
let releasing: NodeJS.Immediate | undefined;

/** Remove the listener of every emptied signal that is still without calls. */
function release(): void {
  releasing = undefined;
  for (const signal of emptied) {
    const calls = watchers.get(signal);
    if (calls === undefined || calls.size > 0) continue;
    watchers.delete(signal);
    signal.removeEventListener('abort', onAbort);
  }
  emptied.clear();
}

/** `call` is settled: its signal no longer concerns it. */
export function unwatchStop(signal: AbortSignal, call: Stoppable): void {
  const calls = watchers.get(signal);
  if (calls === undefined || !calls.delete(call) || calls.size > 0) return;
  emptied.add(signal);
  if (releasing === undefined) {
    releasing = setImmediate(release);
    releasing.unref(); // it never holds the process; a process that exits takes everything anyway
  }
}
