/**
 * The schema compile budget of each host identity: a token bucket of compile time. A host starts
 * with `budgetMs`, spends the time its schemas take to compile (in the worker or on the event loop),
 * and earns it back at `budgetMs` per `windowMs`. A host with nothing left gets its uncompiled tools
 * refused until it has earned time again; other hosts never pay for it.
 */

/** Budget settings (ToolwireServerOptions `schemaCompileBudgetMs`, `schemaCompileWindowMs`). */
export interface CompileBudgetOptions {
  /** Compile time a host may spend at once, and earns back per window, ms. */
  budgetMs: number;
  /** The window, ms. */
  windowMs: number;
}

/** Identities remembered at most; a host forgotten (the one idle longest) starts again with a full budget. */
export const MAX_BUDGET_ENTRIES = 10_000;

interface Bucket {
  /** Time left at `at`, ms (may go below 0 after a compile that overran). */
  left: number;
  at: number;
}

/** Compile time per host identity. `now` is a clock in ms (a test seam). */
export class CompileBudgets {
  readonly #options: CompileBudgetOptions;
  readonly #now: () => number;
  /** Only hosts that spent something and have not earned it all back; least recently charged first. */
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: CompileBudgetOptions, now: () => number = () => performance.now()) {
    this.#options = options;
    this.#now = now;
  }

  /** Compile time `host` may spend now, ms (≤ 0: none). */
  left(host: string): number {
    const bucket = this.#buckets.get(host);
    if (bucket === undefined) return this.#options.budgetMs;
    const { budgetMs, windowMs } = this.#options;
    const left = Math.min(budgetMs, bucket.left + ((this.#now() - bucket.at) * budgetMs) / windowMs);
    if (left >= budgetMs) this.#buckets.delete(host); // all earned back: nothing to remember
    return left;
  }

  /** `host` spent `ms` of compile time. */
  charge(host: string, ms: number): void {
    if (!(ms > 0)) return;
    const left = this.left(host) - ms;
    this.#buckets.delete(host);
    this.#buckets.set(host, { left, at: this.#now() });
    if (this.#buckets.size > MAX_BUDGET_ENTRIES) this.#buckets.delete(this.#buckets.keys().next().value!);
  }

  /** The reason given for a tool whose schema was not compiled because `host` has no time left. */
  refusal(host: string): string {
    const { budgetMs, windowMs } = this.#options;
    return `not compiled: host ${host} has used its schema compile budget (${budgetMs} ms per ${windowMs} ms); advertise again later`;
  }
}
