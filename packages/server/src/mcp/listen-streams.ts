/**
 * A bound on the 2026-07-28 `subscriptions/listen` streams of one caller (`mcpMaxListensPerCaller`).
 * The MCP SDK bounds the streams of all callers together (1024); without a bound per caller, one
 * caller could hold every stream and the others would hear of no tool change. The door counts a
 * stream from its admission until its response closes.
 */
import type { ServerResponse } from 'node:http';

/** Whether `body` is one `subscriptions/listen` request (a 2026-07-28 message is never a batch). */
export function isListen(body: unknown): boolean {
  return typeof body === 'object' && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === 'subscriptions/listen';
}

/** The open listen streams of each caller. */
export class ListenStreams {
  readonly #perCaller: number;
  readonly #open = new Map<string, number>();

  /** @param perCaller streams one caller may hold open at once (a positive integer) */
  constructor(perCaller: number) {
    this.#perCaller = perCaller;
  }

  /**
   * Count `res` as a listen stream of `caller` until it closes; or, when `caller` has
   * `mcpMaxListensPerCaller` open already, count nothing and return why (the door answers 503).
   */
  admit(caller: string, res: ServerResponse): string | undefined {
    const open = this.#open.get(caller) ?? 0;
    if (open >= this.#perCaller) {
      return `Too many subscriptions/listen streams for caller ${JSON.stringify(caller)} (mcpMaxListensPerCaller ${this.#perCaller}); close one first`;
    }
    this.#open.set(caller, open + 1);
    res.once('close', () => {
      const left = (this.#open.get(caller) ?? 1) - 1;
      if (left > 0) this.#open.set(caller, left);
      else this.#open.delete(caller);
    });
    return undefined;
  }
}
