import { describe, expect, it } from 'vitest';
import { Backoff, fullJitterDelay } from '../src/connection/backoff.js';

describe('reconnect backoff', () => {
  it('draws uniformly from [0, min(max, base · 2^attempt)] (full jitter)', () => {
    const opts = { baseMs: 250, maxMs: 30_000 };
    expect(fullJitterDelay(0, opts, () => 0.999)).toBe(249);
    expect(fullJitterDelay(3, opts, () => 0.5)).toBe(1000);
    expect(fullJitterDelay(20, opts, () => 0.5)).toBe(15_000);
    expect(fullJitterDelay(5000, opts, () => 0.999)).toBe(29_970);
    expect(fullJitterDelay(4, opts, () => 0)).toBe(0);
  });

  it('grows per attempt and starts over after reset()', () => {
    const b = new Backoff({ baseMs: 10, maxMs: 1000 }, () => 0.999);
    expect([b.next(), b.next(), b.next()]).toEqual([9, 19, 39]);
    b.reset();
    expect(b.next()).toBe(9);
    expect(() => new Backoff({ baseMs: 100, maxMs: 10 })).toThrow(RangeError);
  });
});
