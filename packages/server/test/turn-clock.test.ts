import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { turnNow } from '../src/turn-clock.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('turnNow', () => {
  it('reads the clock once for the reads of one run of JavaScript and again after the event loop turns', async () => {
    const now = vi.spyOn(Date, 'now');
    now.mockReturnValueOnce(1000).mockReturnValueOnce(2000).mockReturnValueOnce(3000);
    await nextTurn(); // start from a fresh turn: nothing cached
    expect([turnNow(), turnNow(), turnNow()]).toEqual([1000, 1000, 1000]);
    expect(now).toHaveBeenCalledTimes(1);
    await nextTurn();
    expect(turnNow()).toBe(2000);
    expect(now).toHaveBeenCalledTimes(2);
  });

  it('does not keep a reading past the microtasks queued before it', async () => {
    const now = vi.spyOn(Date, 'now');
    await nextTurn();
    now.mockReturnValueOnce(10).mockReturnValueOnce(20);
    const seen: number[] = [turnNow()];
    await Promise.resolve(); // the forget queued by that read has run
    await Promise.resolve();
    seen.push(turnNow());
    expect(seen).toEqual([10, 20]);
  });
});
