/**
 * Admission of calls on the tool host (DESIGN §7 "What a server can make a host do"): what the
 * server sends is bounded here too, because servers have bugs. At most `maxConcurrentCalls` calls
 * run at once on the host, and at most a tool's own `maxConcurrency` of that tool; up to
 * `maxQueuedCalls` more wait, in arrival order; the input bytes of the calls admitted (running and
 * waiting) stay within `maxInputBytes`. Past a bound a call is refused (the caller answers it 75).
 *
 * One instance per `ToolHost`, shared by its connections: calls of a lost connection that are still
 * dying keep their places until their work is gone, so a reconnect cannot double what runs.
 * Counting only — the calls themselves are owned by their `CallSession`.
 */

/** The host's bounds. Sizes in bytes. */
export interface AdmissionLimits {
  /** Calls running at once on the host. ≥ 1. */
  maxConcurrentCalls: number;
  /** Calls waiting for a place to run. ≥ 0. */
  maxQueuedCalls: number;
  /** Input bytes (call frame sizes) of the calls admitted, running or waiting. */
  maxInputBytes: number;
}

/** A call waiting to run. `start` is called once, when it may run (it then counts as running). */
export interface Waiter {
  readonly tool: string;
  /** The tool's own bound (`Infinity` when it has none). */
  readonly limit: number;
  readonly bytes: number;
  start(): void;
}

/** The outcome of {@link Admission.admit}. `run` and `queue` admit the call (its bytes are counted). */
export type Admitted = 'run' | 'queue' | 'queue_full' | 'input_bytes';

/** Counts what runs and waits on one host and says which call may run next. */
export class Admission {
  readonly limits: AdmissionLimits;
  #running = 0;
  #bytes = 0;
  /** Running calls of each tool with a bound of its own (other tools are not counted here). */
  readonly #perTool = new Map<string, number>();
  /** Waiting calls, in arrival order (a Set: a waiter leaves from anywhere in O(1)). */
  readonly #queue = new Set<Waiter>();
  #draining = false;

  constructor(limits: AdmissionLimits) {
    this.limits = limits;
  }

  /** Calls running now. */
  get running(): number {
    return this.#running;
  }

  /** Calls waiting now. */
  get queued(): number {
    return this.#queue.size;
  }

  /** Input bytes of the calls admitted now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Admit a call of `tool` (its own bound `limit`, its input `bytes`): `run` (counted as running:
   * end it with {@link finish}), `queue` (its bytes counted: hand its {@link Waiter} to
   * {@link enqueue} at once), or the bound it would pass (nothing counted). A call that may run
   * runs at once: no waiting call could run instead (each end of a call starts every waiter that fits).
   */
  admit(tool: string, limit: number, bytes: number): Admitted {
    if (this.#bytes + bytes > this.limits.maxInputBytes) return 'input_bytes';
    if (this.#fits(tool, limit)) {
      this.#bytes += bytes;
      this.#enter(tool, limit);
      return 'run';
    }
    if (this.#queue.size >= this.limits.maxQueuedCalls) return 'queue_full';
    this.#bytes += bytes;
    return 'queue';
  }

  /** Queue a call that {@link admit} answered `queue`. */
  enqueue(waiter: Waiter): void {
    this.#queue.add(waiter);
  }

  /** A waiting call leaves without running (deadline, cancel, lost connection). Unknown waiters are ignored. */
  withdraw(waiter: Waiter): void {
    if (this.#queue.delete(waiter)) this.#bytes -= waiter.bytes;
  }

  /** A running call ended (its work is gone): its place goes to the first waiting calls that fit. */
  finish(tool: string, limit: number, bytes: number): void {
    this.#running--;
    this.#bytes -= bytes;
    if (limit !== Number.POSITIVE_INFINITY) {
      const n = (this.#perTool.get(tool) ?? 1) - 1;
      if (n <= 0) this.#perTool.delete(tool);
      else this.#perTool.set(tool, n);
    }
    if (this.#queue.size > 0) this.#drain();
  }

  #fits(tool: string, limit: number): boolean {
    return this.#running < this.limits.maxConcurrentCalls && (limit === Number.POSITIVE_INFINITY || (this.#perTool.get(tool) ?? 0) < limit);
  }

  #enter(tool: string, limit: number): void {
    this.#running++;
    if (limit !== Number.POSITIVE_INFINITY) this.#perTool.set(tool, (this.#perTool.get(tool) ?? 0) + 1);
  }

  /**
   * Start waiting calls in arrival order while they fit (a call of a tool at its own bound is
   * passed over, not waited for). A start that ends a call at once (a synchronous handler) calls
   * {@link finish} from inside: the loop then goes on instead of recursing.
   */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (const waiter of this.#queue) {
        if (this.#running >= this.limits.maxConcurrentCalls) break;
        if (!this.#fits(waiter.tool, waiter.limit)) continue;
        this.#queue.delete(waiter);
        this.#enter(waiter.tool, waiter.limit);
        waiter.start();
      }
    } finally {
      this.#draining = false;
    }
  }
}
