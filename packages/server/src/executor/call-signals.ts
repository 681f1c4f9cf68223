/**
 * The stop signal each executed call is routed with, without an `AbortController` or an
 * `AbortSignal.any()` per call.
 *
 * A call must stop when `Executor.stop(agent)` stops its agent's calls, or when the caller's own
 * signal (`ExecuteRequest.signal`) aborts. Making a fresh controller per call and joining it to the
 * caller's signal with `AbortSignal.any()` cost more CPU than the rest of the executor together, and
 * Node keeps a weak reference in the caller's signal for every `any()` made from it — with one
 * long-lived caller signal, memory grew with every call until that signal aborted. Instead:
 *
 * - each agent has one **stop generation**: one controller shared by its calls in flight. `stop`
 *   aborts it and starts a new generation for later calls; a call without a caller signal is routed
 *   with its generation's signal;
 * - a call with a caller signal is routed with a **link**: one controller aborted by the caller's
 *   signal or by the generation, shared by every call that carries that signal in that generation
 *   while any of them is in flight, so a caller that keeps calls going with one signal (a loop of
 *   calls, or many at once) costs no controller per call. One turn of the event loop after its last
 *   call settled (unless another joined), a link leaves the caller's signal and is forgotten.
 *
 * Nothing here holds memory for a settled call: a generation is kept while its agent has calls in
 * flight, or idle for at most {@link IDLE_AGENTS_KEPT} agents; a link lives while it has calls in
 * flight, and one turn after.
 *
 * Both are {@link StopScope}s: the router reads a routed call's stop from them and has them stop
 * its pending calls, never touching the scope's `signal` (see session/stop-watch.ts: each new
 * `AbortSignal` is a new hidden class to the code that reads it). The signal is still aborted with
 * its scope, for a router, tool control or local tool of the embedder's that listens to it.
 */
import { RENEW_AFTER_ADDS } from '../churn.js';
import { keepShape } from '../keep-shape.js';
import { type Stoppable, type StopScope, stopAll } from '../session/stop-watch.js';

/** Idle agents (no call in flight) whose generation is kept for their next call. */
export const IDLE_AGENTS_KEPT = 1024;

/** What a generation and a link share: their signal, its flag, and the router's pending calls they stop. */
abstract class Scope implements StopScope {
  readonly controller = new AbortController();
  /** `controller.signal`, read once (the getter checks its receiver on every read). */
  readonly signal = this.controller.signal;
  /** `signal.aborted`, as a field (the getter checks its receiver on every read); set only by {@link abort}. */
  aborted = false;
  /** Calls in flight in this scope. */
  calls = 0;
  /** The router's pending calls of this scope (see {@link StopScope.watch}); renewed every {@link RENEW_AFTER_ADDS} calls (`churn.ts`). */
  #watched = new Set<Stoppable>();
  #adds = 0;

  watch(call: Stoppable): void {
    if (++this.#adds === RENEW_AFTER_ADDS) {
      this.#adds = 0;
      this.#watched = new Set(this.#watched);
    }
    this.#watched.add(call);
  }

  unwatch(call: Stoppable): void {
    this.#watched.delete(call);
  }

  /** Abort with `reason` (once): the watched calls stop, then the signal aborts. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    stopAll(this.#watched); // each settles and leaves the set as it stops, or later
    this.controller.abort(reason);
  }
}

/** The stop scope of one agent's calls: aborted by `stop`, then replaced. */
export class Generation extends Scope {
  /** Links of this generation not yet let go (with calls in flight, or idle for at most a turn), aborted with it. */
  readonly links = new Set<Link>();
}

/** A caller signal joined to a generation: one controller for every call that carries both. */
class Link extends Scope {
  /** True while this link listens to its caller signal. */
  attached = false;
  readonly source: AbortSignal;
  readonly generation: Generation;

  constructor(source: AbortSignal, generation: Generation) {
    super();
    this.source = source;
    this.generation = generation;
  }

  /** Listen to the caller's signal (or take its abort at once). */
  attach(): void {
    if (this.attached || this.aborted) return;
    if (this.source.aborted) return this.abort(this.source.reason);
    this.attached = true;
    this.source.addEventListener('abort', this);
  }

  /** Stop listening: a listener would keep an `AbortSignal.any()` or `timeout()` caller signal alive. */
  detach(): void {
    if (!this.attached) return;
    this.attached = false;
    this.source.removeEventListener('abort', this);
  }

  /** The caller's signal aborted (the link is its own listener: no closure per link). */
  handleEvent(): void {
    this.attached = false;
    this.abort(this.source.reason);
  }
}

/**
 * What {@link CallSignals.enter} hands out: `signal` is the one to route with; {@link CallSignals.leave}
 * takes it back. The generation or link itself, not an object per call.
 */
export type CallScope = Generation | Link;

/** The stop generations of every agent with calls in flight (and a bounded number of idle ones). */
// One link kept, with its own signal and generation (no caller's signal is held): links are let go
// when their calls settle, so between bursts none may be alive (see keep-shape.ts).
keepShape(new Link(new AbortController().signal, new Generation()));

export class CallSignals {
  readonly #generations = new Map<string, Generation>();
  /** The current link of each caller signal (weak: a signal nobody holds takes its link along). */
  readonly #links = new WeakMap<AbortSignal, Link>();
  /** Links whose calls all settled in this turn of the event loop; let go by {@link #releaseIdle} unless reused (a new set each turn: `churn.ts`). */
  #idleLinks = new Set<Link>();
  #releasing: NodeJS.Immediate | undefined;
  #inFlight = 0;

  /** Calls entered and not yet left. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** A call of `agent` starts, with the caller's `signal` when it gave one. Pair with {@link leave}. */
  enter(agent: string, signal: AbortSignal | undefined): CallScope {
    let generation = this.#generations.get(agent);
    if (generation === undefined) {
      generation = new Generation();
      this.#generations.set(agent, generation);
    }
    generation.calls++;
    this.#inFlight++;
    if (signal === undefined) return generation;
    let link = this.#links.get(signal);
    if (link === undefined || link.generation !== generation) {
      // A link of an older generation (or another agent) serves out its calls and is then detached.
      link = new Link(signal, generation);
      this.#links.set(signal, link);
      // Listed in its generation until let go (#releaseIdle), not per call: a stop aborts it with the
      // generation, and a link without calls that a stop aborts is never joined again (a stop starts
      // a new generation).
      generation.links.add(link);
    }
    if (link.calls++ === 0) link.attach();
    return link;
  }

  /** The call of `scope` (entered for `agent`) settled. */
  leave(agent: string, scope: CallScope): void {
    this.#inFlight--;
    const link = scope instanceof Link ? scope : undefined;
    const generation = link === undefined ? (scope as Generation) : link.generation;
    generation.calls--;
    if (link !== undefined && --link.calls === 0) {
      // Let go one turn later unless a call joins it meanwhile: a sequential caller's next call
      // does, in the same turn, and then costs no listener change and no new controller.
      this.#idleLinks.add(link);
      if (this.#releasing === undefined) {
        this.#releasing = setImmediate(() => this.#releaseIdle());
        this.#releasing.unref(); // never holds the process open
      }
    }
    if (generation.calls === 0 && this.#generations.size > IDLE_AGENTS_KEPT && this.#generations.get(agent) === generation) {
      this.#generations.delete(agent);
    }
  }

  /** Detach every link still without calls from its caller signal and forget it: nothing of it stays reachable. */
  #releaseIdle(): void {
    this.#releasing = undefined;
    for (const link of this.#idleLinks) {
      if (link.calls > 0) continue;
      link.detach();
      link.generation.links.delete(link);
      if (this.#links.get(link.source) === link) this.#links.delete(link.source);
    }
    this.#idleLinks = new Set();
  }

  /**
   * Stop every call in flight of `agent` (all agents when `undefined`) with reason `"stop"`; later
   * calls of that agent are not affected. Returns how many calls were stopped (calls of a generation
   * stopped before are not counted again).
   */
  stop(agent: string | undefined): number {
    let stopped = 0;
    for (const [name, generation] of this.#generations) {
      if (agent !== undefined && name !== agent) continue;
      if (generation.calls === 0) continue;
      this.#generations.delete(name);
      stopped += generation.calls;
      generation.abort('stop');
      for (const link of generation.links) link.abort('stop');
    }
    return stopped;
  }
}
