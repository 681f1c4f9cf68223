/**
 * Adversarial unit checks of src/session/deadlines.ts: re-entrant use from an expiry, many distinct
 * lengths, and the process-alive (ref) state of the shared timers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, type Expiring, MAX_IDLE_LENGTHS } from '../src/session/deadlines.js';

describe('Deadlines under re-entrant and mixed use', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const item = (log: string[], name: string, onExpire?: () => void): Expiring => ({
    expiresAt: 0,
    expire: () => {
      log.push(`${name}@${Math.round(performance.now())}`);
      onExpire?.();
    },
  });

  it('a call of the same length added from inside an expiry expires at its own deadline', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    d.add(
      item(log, 'a', () => d.add(item(log, 'b'), 100)),
      100,
    );
    vi.advanceTimersByTime(250);
    expect(log).toEqual(['a@100', 'b@200']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('1000 calls of 1..1000 distinct lengths, half removed, expire each at its deadline and leave no timer', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    const removed: [Expiring, number][] = [];
    for (let ms = 1; ms <= 1000; ms++) {
      const it = item(log, String(ms));
      d.add(it, ms);
      if (ms % 2 === 0) removed.push([it, ms]);
    }
    for (const [it, ms] of removed) d.remove(it, ms);
    vi.advanceTimersByTime(1001);
    expect(log).toEqual(Array.from({ length: 500 }, (_, i) => `${2 * i + 1}@${2 * i + 1}`));
    expect(vi.getTimerCount()).toBe(0);
  });

  // Hardening (no path through PendingCalls triggers it today): when the session is cleared from
  // inside an expiry, #fire keeps working on the queue clear() already dropped and arms a new ref'd
  // timer for it — a timer that outlives clear().
  it('clear() from inside an expiry leaves no timer armed', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    d.add(
      item(log, 'a', () => d.clear()),
      100,
    );
    vi.advanceTimersByTime(10);
    d.add(item(log, 'b'), 100);
    vi.advanceTimersByTime(90);
    expect(log).toEqual(['a@100']);
    expect(vi.getTimerCount()).toBe(0);
  });

  // A caller picks each call's deadline (MCP `_meta` toolwire/deadlineMs, a cluster call's deadline +
  // grace): calls that all settled at once must not leave a timer, a Map entry and a Set per length
  // they used until that length passes (up to 2^31 − 1 ms).
  it('10,000 settled calls of distinct lengths leave at most 16 idle timers', () => {
    const d = new Deadlines<Expiring>();
    for (let i = 0; i < 10_000; i++) {
      const it = item([], String(i));
      d.add(it, 600_000 + i);
      d.remove(it, 600_000 + i);
    }
    expect(vi.getTimerCount()).toBeLessThanOrEqual(MAX_IDLE_LENGTHS);
    const log: string[] = [];
    d.add(item(log, 'late'), 600_000); // a length dropped or kept still expires on time
    vi.advanceTimersByTime(600_000);
    expect(log).toEqual(['late@600000']);
    d.clear();
  });
});
