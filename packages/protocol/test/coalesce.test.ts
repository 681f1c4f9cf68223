import { describe, expect, it } from 'vitest';
import { COALESCE_MAX_BYTES, COALESCE_MAX_FRAMES, TickCoalescer } from '../src/coalesce.js';

function fakeSocket() {
  const log: string[] = [];
  return { log, cork: () => log.push('cork'), uncork: () => log.push('uncork') };
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('TickCoalescer', () => {
  it('lets the first frame of a tick go at once and never corks for a lone frame', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.hold(100);
    await nextTick();
    coalescer.hold(100);
    await nextTick();
    expect(socket.log).toEqual([]);
  });

  it('corks at the second frame of a tick, once for the rest of the tick, and uncorks on the next tick', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.hold(100);
    coalescer.hold(100);
    coalescer.hold(100);
    expect(socket.log).toEqual(['cork']);
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork']);
  });

  it('corks again in a later tick', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.hold(1);
    coalescer.hold(1);
    await nextTick();
    coalescer.hold(1);
    coalescer.hold(1);
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });

  it('does not cork for a frame over the size limit', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.hold(1);
    coalescer.hold(COALESCE_MAX_BYTES + 1);
    await nextTick();
    expect(socket.log).toEqual([]);
  });

  it('flushes a full batch and starts the next one in the same tick', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    for (let i = 0; i < 1 + COALESCE_MAX_FRAMES + 1; i++) coalescer.hold(1);
    expect(socket.log).toEqual(['cork', 'uncork', 'cork']);
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });
});
