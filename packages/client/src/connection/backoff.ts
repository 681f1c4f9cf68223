/**
 * Reconnect delays: exponential backoff with full jitter (AWS Architecture Blog, "Exponential
 * Backoff And Jitter", 2015): `delay = random(0, min(maxMs, baseMs · 2^attempt))`.
 */

/** Backoff bounds, ms. Defaults: `Defaults.reconnectBaseMs` 250 → `Defaults.reconnectMaxMs` 30000. */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/**
 * The delay before reconnect attempt `attempt` (0 = first retry), ms: uniform in
 * `[0, min(maxMs, baseMs · 2^attempt)]`.
 *
 * @param random a source in [0, 1); default `Math.random`
 */
export function fullJitterDelay(attempt: number, { baseMs, maxMs }: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 52));
  return Math.floor(random() * ceiling);
}

/** Counts attempts since the last success and hands out the next full-jitter delay. */
export class Backoff {
  #attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {
    if (!(options.baseMs >= 0) || !(options.maxMs >= options.baseMs)) {
      throw new RangeError(`reconnect backoff needs 0 ≤ baseMs ≤ maxMs, got ${options.baseMs}, ${options.maxMs}`);
    }
  }

  /** The delay for the next attempt, ms; advances the attempt counter. */
  next(): number {
    return fullJitterDelay(this.#attempt++, this.options, this.random);
  }

  /** Start over after a successful connection (a `welcome`). */
  reset(): void {
    this.#attempt = 0;
  }

  /** The largest delay handed out, ms (also the bound of a 429's `Retry-After` wait). */
  get maxMs(): number {
    return this.options.maxMs;
  }

  /** Attempts since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }
}
