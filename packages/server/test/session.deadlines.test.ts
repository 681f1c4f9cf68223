/**
 * The per-session deadline timers (src/session/deadlines.ts) and the shared stop listener
 * (src/session/stop-watch.ts) that replaced one timer and one abort listener per pending call.
 */
import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RENEW_AFTER_ADDS } from '../src/churn.js';
import { Deadlines, type Expiring } from '../src/session/deadlines.js';
import { unwatchStop, watchStop } from '../src/session/stop-watch.js';

describe('Deadlines: one timer per deadline length', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const item = (log: string[], name: string): Expiring => ({ expiresAt: 0, expire: () => log.push(`${name}@${Math.round(performance.now())}`) });

  it('expires each call at its own start + deadlineMs, in order, with one timer per length', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    d.add(item(log, 'a'), 100);
    vi.advanceTimersByTime(30);
    d.add(item(log, 'b'), 100);
    d.add(item(log, 'x'), 50);
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(200);
    expect(log).toEqual(['x@80', 'a@100', 'b@130']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps order and removals across the copies a churning length is renewed with', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    const items = Array.from({ length: 3 * RENEW_AFTER_ADDS + 5 }, (_, k) => item(log, String(k)));
    for (const [k, it] of items.entries()) {
      d.add(it, 100);
      if (k % 2 === 1) d.remove(items[k - 1]!, 100); // each odd call settles the one before it
    }
    vi.advanceTimersByTime(100);
    expect(log).toEqual(items.flatMap((_, k) => (k % 2 === 1 || k === items.length - 1 ? [`${k}@100`] : [])));
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a removed call never expires; the timer moves on to the next call; nothing is left after clear()', () => {
    const log: string[] = [];
    const d = new Deadlines<Expiring>();
    const a = item(log, 'a');
    d.add(a, 100);
    vi.advanceTimersByTime(10);
    d.add(item(log, 'b'), 100);
    d.remove(a, 100);
    vi.advanceTimersByTime(150);
    expect(log).toEqual(['b@110']);
    d.add(item(log, 'c'), 100);
    d.clear();
    vi.advanceTimersByTime(500);
    expect(log).toEqual(['b@110']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an emptied length keeps its timer, unref’d (it never holds the process alive), and refs it again for the next call', () => {
    const timers: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms: number) => {
      const t = real(fn, ms);
      timers.push(t);
      return t;
    }) as typeof setTimeout);
    const d = new Deadlines<Expiring>();
    const a = item([], 'a');
    d.add(a, 1000);
    expect(timers).toHaveLength(1);
    expect(timers[0]!.hasRef()).toBe(true);
    d.remove(a, 1000);
    expect(timers[0]!.hasRef()).toBe(false);
    d.add(item([], 'b'), 1000);
    expect(timers).toHaveLength(1); // the same timer serves the next call
    expect(timers[0]!.hasRef()).toBe(true);
    spy.mockRestore();
    d.clear();
  });
});

describe('stop watch: one abort listener per signal', () => {
  it('many calls on one signal add one listener; abort stops the calls still watched, once each', () => {
    const controller = new AbortController();
    const stopped: string[] = [];
    const call = (name: string) => ({ stop: () => stopped.push(name) });
    const a = call('a');
    const b = call('b');
    const c = call('c');
    watchStop(controller.signal, a);
    watchStop(controller.signal, b);
    watchStop(controller.signal, c);
    unwatchStop(controller.signal, b); // settled before the stop
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    controller.abort();
    expect(stopped).toEqual(['a', 'c']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('stops the calls still watched after many calls came and went on one signal (its set renewed on the way)', () => {
    const controller = new AbortController();
    const stopped: number[] = [];
    const calls = Array.from({ length: 3 * RENEW_AFTER_ADDS + 7 }, (_, k) => ({ stop: () => stopped.push(k) }));
    for (const [k, call] of calls.entries()) {
      watchStop(controller.signal, call);
      if (k % 3 !== 0) unwatchStop(controller.signal, call);
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(stopped).toEqual(calls.flatMap((_, k) => (k % 3 === 0 ? [k] : [])));
  });

  it('a call watched in the same turn as its signal’s earlier calls settled still stops (the listener is kept)', () => {
    const controller = new AbortController();
    const stopped: string[] = [];
    const first = { stop: () => stopped.push('first') };
    watchStop(controller.signal, first);
    unwatchStop(controller.signal, first);
    const second = { stop: () => stopped.push('second') };
    watchStop(controller.signal, second);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(stopped).toEqual(['second']);
  });

  it('a signal whose calls all settled is let go one loop turn later (its listener removed), unless a call joined meanwhile', async () => {
    const idle = new AbortController();
    const busy = new AbortController();
    const a = { stop: () => {} };
    const b = { stop: () => {} };
    watchStop(idle.signal, a);
    watchStop(busy.signal, b);
    unwatchStop(idle.signal, a);
    unwatchStop(busy.signal, b);
    watchStop(busy.signal, b); // the next call of a sequential caller, in the same turn
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(idle.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(busy.signal, 'abort')).toHaveLength(1);
    unwatchStop(busy.signal, b);
  });
});
