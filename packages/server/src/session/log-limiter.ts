/**
 * Log lines about one source, rate-limited: at most `maxLogLinesPerHost` per `logWindowMs`. Lines over
 * the limit are counted, and the first line of a later window is preceded by one line saying how many
 * were suppressed, so a misbehaving host (or a record folder that fails every write) costs a bounded
 * amount of log whatever happens.
 */
import type { Logger } from '../options.js';

/** Settings (ToolwireServerOptions `maxLogLinesPerHost`, `logWindowMs`). */
export interface LogLimits {
  /** Warning lines per host per window. */
  maxLogLinesPerHost: number;
  /** The window, ms. */
  logWindowMs: number;
}

/** What a limiter's lines are about: their level, and the line that reports how many were suppressed. */
export interface LogSource {
  level: 'warn' | 'error';
  /** The text of the suppressed-count line, for `n` lines. */
  suppressed(n: number): string;
}

/** A host's warnings (the default source). */
export const HOST_WARNINGS: LogSource = { level: 'warn', suppressed: (n) => `${n} more warnings about this host suppressed` };

export class LogLimiter {
  readonly #logger: Logger;
  readonly #limits: LogLimits;
  readonly #now: () => number;
  readonly #source: LogSource;
  #windowStart = -Infinity;
  #lines = 0;
  #suppressed = 0;

  constructor(logger: Logger, limits: LogLimits, now: () => number = () => performance.now(), source: LogSource = HOST_WARNINGS) {
    this.#logger = logger;
    this.#limits = limits;
    this.#now = now;
    this.#source = source;
  }

  /** Lines suppressed and not yet reported. */
  get suppressed(): number {
    return this.#suppressed;
  }

  /** Log `obj`/`msg` at warn level, unless this host's lines for the window are used up. */
  warn(obj: { host: string } & Record<string, unknown>, msg: string): void {
    this.line(obj, msg, { host: obj.host });
  }

  /**
   * Log `obj`/`msg` at the source's level, unless the lines for the window are used up; `about` are
   * the fields of the suppressed-count line that may precede it.
   */
  line(obj: Record<string, unknown>, msg: string, about: Record<string, unknown> = {}): void {
    const now = this.#now();
    if (now - this.#windowStart >= this.#limits.logWindowMs) {
      this.#windowStart = now;
      this.#lines = 0;
      this.flush(about);
    }
    if (this.#lines >= this.#limits.maxLogLinesPerHost) {
      this.#suppressed++;
      return;
    }
    this.#lines++;
    this.#logger[this.#source.level](obj, msg);
  }

  /** Report the suppressed count now (e.g. when the session ends), if there is one, with the fields `about` (e.g. `{ host }`). */
  flush(about: Record<string, unknown>): void {
    if (this.#suppressed === 0) return;
    this.#logger[this.#source.level]({ ...about, suppressed: this.#suppressed }, this.#source.suppressed(this.#suppressed));
    this.#suppressed = 0;
  }
}
