/**
 * Warnings about one host, rate-limited: at most `lines` per `windowMs`. Lines over the limit are
 * counted, and the first line of a later window is preceded by one line saying how many were
 * suppressed, so a misbehaving host costs a bounded amount of log whatever it sends.
 */
import type { Logger } from '../options.js';

/** Settings (ToolwireServerOptions `maxLogLinesPerHost`, `logWindowMs`). */
export interface LogLimits {
  /** Warning lines per host per window. */
  maxLogLinesPerHost: number;
  /** The window, ms. */
  logWindowMs: number;
}

export class LogLimiter {
  readonly #logger: Logger;
  readonly #limits: LogLimits;
  readonly #now: () => number;
  #windowStart = -Infinity;
  #lines = 0;
  #suppressed = 0;

  constructor(logger: Logger, limits: LogLimits, now: () => number = () => performance.now()) {
    this.#logger = logger;
    this.#limits = limits;
    this.#now = now;
  }

  /** Lines suppressed and not yet reported. */
  get suppressed(): number {
    return this.#suppressed;
  }

  /** Log `obj`/`msg` at warn level, unless this host's lines for the window are used up. */
  warn(obj: { host: string } & Record<string, unknown>, msg: string): void {
    const now = this.#now();
    if (now - this.#windowStart >= this.#limits.logWindowMs) {
      this.#windowStart = now;
      this.#lines = 0;
      this.flush(obj.host);
    }
    if (this.#lines >= this.#limits.maxLogLinesPerHost) {
      this.#suppressed++;
      return;
    }
    this.#lines++;
    this.#logger.warn(obj, msg);
  }

  /** Report the suppressed count now (when the session ends), if there is one. */
  flush(host: string): void {
    if (this.#suppressed === 0) return;
    this.#logger.warn({ host, suppressed: this.#suppressed }, `${this.#suppressed} more warnings about this host suppressed`);
    this.#suppressed = 0;
  }
}
