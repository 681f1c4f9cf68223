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
 * signal alive while it has an `abort` listener.
 *
 * A call the executor routes also carries its {@link StopScope} (under {@link STOP_SCOPE}): the stop
 * is then read from and watched on that scope, never on `call.signal`. Node 20 gives every
 * `AbortSignal` a hidden class of its own, so reading a new signal's `aborted` here (a new link's
 * signal for each caller's first call after a pause) threw the optimized call path back to the
 * interpreter ("wrong map"); the scopes are of the executor's classes, whatever signal the caller
 * passed. The call's `signal` stays a real `AbortSignal`, aborted with its scope, for any other
 * router or local tool that reads it.
 */
import { RENEW_AFTER_ADDS } from '../churn.js';
import type { RoutedCall } from '../seam.js';

/** What a watched call does when its signal aborts. */
export interface Stoppable {
  stop(): void;
}

/** Calls still pending per signal. Weak: a signal nobody holds takes its set with it. */
const watchers = new WeakMap<AbortSignal, Set<Stoppable>>();
/** Calls watched since a set was last renewed (`churn.ts`; the signal of the call that reaches the count gets a new set). */
let adds = 0;

/**
 * The stop of the calls the executor routes (executor/call-signals.ts): aborted, and the watched
 * calls stopped, together with the call's `signal`.
 */
export interface StopScope {
  /** True once the scope stopped (it never un-stops). */
  readonly aborted: boolean;
  /** Stop `call` when this scope stops; the caller checks {@link aborted} again after this. */
  watch(call: Stoppable): void;
  /** `call` settled: this scope no longer concerns it. */
  unwatch(call: Stoppable): void;
}

/** The key of a routed call's {@link StopScope}; only the executor sets it. */
export const STOP_SCOPE: unique symbol = Symbol('toolwire.stopScope');

/** A routed call, with the executor's stop scope when the executor made it. */
export interface ScopedCall extends RoutedCall {
  [STOP_SCOPE]?: StopScope;
}

/** Whether `call` is stopped: its scope's flag, or else its signal's. */
export function isStopped(call: RoutedCall): boolean {
  const scope = (call as ScopedCall)[STOP_SCOPE];
  return scope === undefined ? call.signal.aborted : scope.aborted;
}

/** Stop `stoppable` when `call` is stopped (the caller checks {@link isStopped} again after this). */
export function watchCall(call: RoutedCall, stoppable: Stoppable): void {
  const scope = (call as ScopedCall)[STOP_SCOPE];
  if (scope === undefined) watchStop(call.signal, stoppable);
  else scope.watch(stoppable);
}

/** `stoppable`, watching `call`, settled. */
export function unwatchCall(call: RoutedCall, stoppable: Stoppable): void {
  const scope = (call as ScopedCall)[STOP_SCOPE];
  if (scope === undefined) unwatchStop(call.signal, stoppable);
  else scope.unwatch(stoppable);
}

/**
 * Stop each of `calls`. One that throws is reported as an uncaught error (as when each call had its
 * own listener); the others still stop.
 */
export function stopAll(calls: Iterable<Stoppable>): void {
  for (const call of calls) {
    try {
      call.stop();
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }
}

/** The listener of every watched signal (`this` is the signal, DOM `EventTarget` semantics). */
function onAbort(this: AbortSignal): void {
  const calls = watchers.get(this);
  if (calls === undefined) return;
  watchers.delete(this);
  stopAll(calls);
}

/** Stop `call` when `signal` aborts (the caller checks `signal.aborted` again after this). */
export function watchStop(signal: AbortSignal, call: Stoppable): void {
  let calls = watchers.get(signal);
  if (calls === undefined) {
    calls = new Set();
    watchers.set(signal, calls);
    signal.addEventListener('abort', onAbort, { once: true });
  } else if (++adds === RENEW_AFTER_ADDS) {
    adds = 0;
    calls = new Set(calls);
    watchers.set(signal, calls);
  }
  calls.add(call);
}

/** Signals whose last call settled in this turn; checked by {@link release}. */
let emptied = new Set<AbortSignal>();
let releasing: NodeJS.Immediate | undefined;

/** Remove the listener of every emptied signal that is still without calls. */
function release(): void {
  releasing = undefined;
  const signals = emptied;
  emptied = new Set(); // replaced, not cleared (`churn.ts`: a cleared table stays linked to the next)
  for (const signal of signals) {
    const calls = watchers.get(signal);
    if (calls === undefined || calls.size > 0) continue;
    watchers.delete(signal);
    signal.removeEventListener('abort', onAbort);
  }
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
