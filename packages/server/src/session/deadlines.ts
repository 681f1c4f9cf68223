/**
 * Deadlines of one session's pending calls, with one timer per distinct deadline length instead of
 * one per call. Calls given the same `deadlineMs` expire in the order they were added, so each
 * length keeps its calls in insertion order and one timer armed for the oldest. A `setTimeout` +
 * `clearTimeout` per call made garbage and a timer-list insertion per call (bench/README.md item 18);
 * here an added call costs a `Set.add`, and the timer is re-armed at most once per expiry of its head.
 *
 * A call expires when `performance.now()` (monotonic) reaches its start + `deadlineMs`, within the
 * 1 ms a timer of its own would allow (Node counts timers from the event loop's cached time), late by
 * the event loop's lag at most. A timer keeps the process alive only while its length has calls.
 */
import { RENEW_AFTER_ADDS } from '../churn.js';

/** What a deadline queue holds: the call's expiry time (`performance.now()` ms) and its expiry action. */
export interface Expiring {
  /** When the call expires, `performance.now()` ms; set by {@link Deadlines.add}. */
  expiresAt: number;
  /** Called once when the deadline passes, unless removed first. */
  expire(): void;
}

/** How early (ms) a call may expire, as a timer of its own could (see the module comment). */
const SLACK_MS = 1;

/**
 * Lengths in use at most, for an emptied length to keep its timer for the next call of that length.
 * Callers choose deadlines, so lengths are many; past this an emptied length's timer is cleared at
 * once (a timer per call, as without this class), so calls that settled do not keep a timer, a Map
 * entry and a Set per length they used until that length passes (up to 2^31 − 1 ms).
 */
export const MAX_IDLE_LENGTHS = 16;

class Queue<T extends Expiring> {
  /** Renewed every {@link RENEW_AFTER_ADDS} additions (`churn.ts`). */
  items = new Set<T>();
  adds = 0;
  timer: NodeJS.Timeout | undefined = undefined;
}

/** One timer per distinct deadline length (ms), armed for that length's oldest pending call. */
export class Deadlines<T extends Expiring> {
  readonly #queues = new Map<number, Queue<T>>();

  /** Start `item`'s deadline of `deadlineMs` (integer ms ≥ 1, ≤ 2^31 − 1). */
  add(item: T, deadlineMs: number): void {
    item.expiresAt = performance.now() + deadlineMs;
    let queue = this.#queues.get(deadlineMs);
    if (queue === undefined) {
      queue = new Queue<T>();
      this.#queues.set(deadlineMs, queue);
    }
    if (++queue.adds === RENEW_AFTER_ADDS) {
      queue.adds = 0;
      queue.items = new Set(queue.items);
    }
    queue.items.add(item);
    if (queue.timer === undefined) queue.timer = setTimeout(() => this.#fire(deadlineMs), deadlineMs);
    else if (queue.items.size === 1) queue.timer.ref();
  }

  /**
   * Stop `item`'s deadline. Its queue's timer stays armed (so the next call of that length needs no
   * new timer) while at most {@link MAX_IDLE_LENGTHS} lengths are in use, else an emptied queue goes
   * at once; when a kept timer fires with nothing due, it re-arms for the oldest call left or goes away.
   */
  remove(item: T, deadlineMs: number): void {
    const queue = this.#queues.get(deadlineMs);
    if (queue === undefined || !queue.items.delete(item) || queue.items.size > 0) return;
    if (this.#queues.size <= MAX_IDLE_LENGTHS) {
      queue.timer?.unref();
      return;
    }
    clearTimeout(queue.timer);
    this.#queues.delete(deadlineMs); // #fire, if it is running for this length, sees the queue gone
  }

  /** Clear every timer and forget every call (the session ended). */
  clear(): void {
    for (const queue of this.#queues.values()) clearTimeout(queue.timer);
    this.#queues.clear();
  }

  #fire(deadlineMs: number): void {
    const queue = this.#queues.get(deadlineMs);
    if (queue === undefined) return;
    queue.timer = undefined;
    const now = performance.now();
    for (const item of queue.items) {
      if (item.expiresAt > now + SLACK_MS) break; // the rest were added later: they expire later
      queue.items.delete(item);
      item.expire();
    }
    if (this.#queues.get(deadlineMs) !== queue) return; // cleared by an expiry (the session ended)
    const head = queue.items.values().next();
    if (head.done) {
      if (queue.timer === undefined) this.#queues.delete(deadlineMs);
      return;
    }
    queue.timer ??= setTimeout(() => this.#fire(deadlineMs), Math.max(1, Math.ceil(head.value.expiresAt - now)));
  }
}
