/**
 * One pending call of a host session (`pending-calls.ts`): the entry its session's map owns, its
 * deadline (`deadlines.ts`) and stop watch (`stop-watch.ts`) call back into, and that settles it
 * exactly once.
 */
import type { Capture } from '@toolwire/protocol';
import { keepShape } from '../keep-shape.js';
import type { OutputListener, ProgressListener, RoutedCall } from '../seam.js';
import type { Expiring } from './deadlines.js';
import type { OutputStream } from './output-stream.js';
import type { PendingCalls } from './pending-calls.js';
import { type Stoppable, unwatchCall } from './stop-watch.js';

/**
 * One pending call. A class, not an object literal with methods: methods of a literal are closures
 * made per call over the dispatching function's context (the caller's call, the promise's
 * `resolve` and through it the settled capture), which kept settled captures (their external bytes)
 * alive past their calls: more full GCs (bench/README.md item 10). It is also not an arrow
 * function per call (tsx compiles with esbuild `keepNames`, which names each named arrow function
 * as it is created, a cost on every call).
 */
export class Entry implements Expiring, Stoppable {
  /** A stop landed: the host was sent `cancel` and the call settles 130 (with the host's partial output if it answers). */
  stopped = false;
  /** After a stop, the cancel-grace timer. */
  timer: NodeJS.Timeout | undefined = undefined;
  /** When the deadline passes (`performance.now()` ms), kept by the session's `Deadlines` (`deadlines.ts`). */
  expiresAt = 0;
  /** Its progress consumer threw once (logged once). */
  progressFailed = false;
  /** Live output since the first `output` chunk (protocol 2). */
  output: OutputStream | undefined = undefined;
  readonly id: string;
  readonly deadlineMs: number;
  /**
   * The routed call this entry answers (found by {@link PendingCalls.stopCall}); its `signal`,
   * `onOutput` and `onProgress` are read from it (not copied: a smaller entry per call).
   */
  readonly routed: RoutedCall;
  readonly #owner: PendingCalls;
  #resolve: ((capture: Capture) => void) | undefined;

  constructor(id: string, deadlineMs: number, owner: PendingCalls, call: RoutedCall, resolve: (capture: Capture) => void) {
    this.id = id;
    this.deadlineMs = deadlineMs;
    this.routed = call;
    this.#owner = owner;
    this.#resolve = resolve;
  }

  /** The call's consumer of live output (`RoutedCall.onOutput`). */
  get listener(): OutputListener | undefined {
    return this.routed.onOutput;
  }

  /** The call's consumer of progress messages (`RoutedCall.onProgress`). */
  get progressListener(): ProgressListener | undefined {
    return this.routed.onProgress;
  }

  /** The streamed part of the capture so far (for a synthetic capture), or `undefined` when nothing streamed. */
  part(): { stdout: Uint8Array; stderr: Uint8Array } | undefined {
    return this.output?.part();
  }

  /** Settle once: leave the session, its deadline and its signal's watch, clear the timer, resolve. */
  settle(capture: Capture): void {
    if (!this.#owner.release(this)) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    unwatchCall(this.routed, this);
    // The consumer's last chunk (toolwire's reason line, if any) before the call settles; none after.
    this.output?.end(capture);
    const resolve = this.#resolve!;
    this.#resolve = undefined;
    resolve(capture);
  }

  /** The deadline passed (called by the session's {@link Deadlines}). */
  expire(): void {
    this.#owner.expire(this);
  }

  /** The call's signal aborted (called by `stop-watch.ts`). */
  stop(): void {
    this.#owner.stop(this);
  }
}

// One entry kept for the life of the process (keep-shape.ts), made with no call (it holds no caller's
// object) and with a deadline as `Deadlines.add` sets it (a fraction of a ms: the field's double
// representation): while no call is in flight, a full GC dropped Entry's hidden classes otherwise and
// deoptimized `dispatch`, which inlines its constructor.
const keptEntry = new Entry('', 1, undefined as never, undefined as never, () => undefined);
keptEntry.expiresAt = 0.5;
keepShape(keptEntry);
