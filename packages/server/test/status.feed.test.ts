/**
 * The status feed's bound on a viewer that does not read (`status/feed.ts`): a socket that never
 * drains cannot hold a viewer slot for its session's life. A response whose writes are refused stands
 * in for the non-reading socket (a real one needs megabytes of snapshots to fill the kernel's buffers).
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FEED_MAX_MS, StatusFeed, STALLED_MS, TICK_MS } from '../src/status/feed.js';
import type { StatusSnapshot } from '../src/status/snapshot.js';

/** A response that takes the first `accepted` writes and then reports a full buffer (no `drain`). */
class StuckResponse extends EventEmitter {
  writes = 0;
  destroyed = false;
  ended = false;
  constructor(readonly accepted: number) {
    super();
  }
  writeHead(): this {
    return this;
  }
  write(): boolean {
    this.writes += 1;
    return this.writes <= this.accepted;
  }
  end(): void {
    this.ended = true;
    this.emit('close');
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

let n = 0;
const snapshot = () => ({ at: new Date().toISOString(), n: n++ }) as unknown as StatusSnapshot;

describe('StatusFeed: a viewer that does not read', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it(`is closed once its socket has not drained for ${STALLED_MS} ms, freeing its slot; a viewer that reads stays`, () => {
    const feed = new StatusFeed(snapshot, 2);
    const stuck = new StuckResponse(1); // takes the hello, then never drains
    const reading = new StuckResponse(Infinity);
    expect(feed.add(stuck as unknown as ServerResponse, {}, () => true, {})).toBe(true);
    expect(feed.add(reading as unknown as ServerResponse, {}, () => true, {})).toBe(true);
    expect(feed.add(new StuckResponse(Infinity) as unknown as ServerResponse, {}, () => true, {})).toBe(false); // full

    vi.advanceTimersByTime(STALLED_MS - TICK_MS);
    expect(stuck.destroyed).toBe(false);
    expect(feed.size).toBe(2);
    vi.advanceTimersByTime(2 * TICK_MS);
    expect(stuck.destroyed).toBe(true);
    expect(reading.destroyed || reading.ended).toBe(false);
    expect(feed.size).toBe(1);
    expect(feed.add(new StuckResponse(Infinity) as unknown as ServerResponse, {}, () => true, {})).toBe(true); // the slot is free again
    feed.close();
  });

  it(`ends every stream after ${FEED_MAX_MS} ms (the page reconnects), so a client whose kernel buffers still take the snapshots but that never reads frees its slot`, () => {
    // A real non-reading client: the kernel's socket buffers (up to tcp_rmem's 32 MiB here) take
    // its snapshots for hours without a full buffer, so the stall bound alone never fires.
    const feed = new StatusFeed(snapshot, 1);
    const unread = new StuckResponse(Infinity);
    expect(feed.add(unread as unknown as ServerResponse, {}, () => true, {})).toBe(true);
    vi.advanceTimersByTime(FEED_MAX_MS - TICK_MS);
    expect(unread.ended || unread.destroyed).toBe(false);
    expect(feed.add(new StuckResponse(Infinity) as unknown as ServerResponse, {}, () => true, {})).toBe(false); // full
    vi.advanceTimersByTime(2 * TICK_MS);
    expect(unread.ended).toBe(true);
    expect(feed.size).toBe(0);
    const next = new StuckResponse(Infinity);
    expect(feed.add(next as unknown as ServerResponse, {}, () => true, {})).toBe(true); // the slot is free again
    vi.advanceTimersByTime(FEED_MAX_MS - TICK_MS);
    expect(next.ended).toBe(false); // its own time counts from its start
    feed.close();
  });

  it('a viewer that drains in time is kept, and its stall counts again from its next full buffer', () => {
    const feed = new StatusFeed(snapshot, 1);
    const slow = new StuckResponse(1);
    feed.add(slow as unknown as ServerResponse, {}, () => true, {});
    vi.advanceTimersByTime(STALLED_MS - 2 * TICK_MS);
    slow.emit('drain'); // it read: the skipped snapshot is sent (and fills the buffer again)
    vi.advanceTimersByTime(2 * TICK_MS);
    expect(slow.destroyed).toBe(false);
    expect(feed.size).toBe(1);
    vi.advanceTimersByTime(STALLED_MS);
    expect(slow.destroyed).toBe(true);
    expect(feed.size).toBe(0);
    feed.close();
  });
});
