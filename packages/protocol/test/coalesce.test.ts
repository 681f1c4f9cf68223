import { describe, expect, it } from 'vitest';
import { COALESCE_MAX_BYTES, COALESCE_MAX_FRAMES, TickCoalescer, TurnCoalescer } from '../src/coalesce.js';

function fakeSocket() {
  const log: string[] = [];
  return { log, cork: () => log.push('cork'), uncork: () => log.push('uncork') };
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

describe('TickCoalescer.holdTick', () => {
  it('corks before the first frame of a tick when more frames are known to follow, and uncorks on the next tick', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.holdTick();
    coalescer.hold(100);
    coalescer.holdTick();
    coalescer.hold(100);
    expect(socket.log).toEqual(['cork']);
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork']);
    coalescer.hold(100); // the next tick's first frame goes out at once again
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork']);
  });

  it('joins a tick whose first frame already went out, and flushes every full batch', async () => {
    const socket = fakeSocket();
    const coalescer = new TickCoalescer(socket);
    coalescer.hold(1);
    coalescer.holdTick();
    for (let i = 0; i < COALESCE_MAX_FRAMES + 1; i++) coalescer.hold(1);
    expect(socket.log).toEqual(['cork', 'uncork', 'cork']);
    await nextTick();
    expect(socket.log).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });
});

describe('TurnCoalescer', () => {
  it('corks at the first frame of a turn, keeps the socket corked through later ticks of it, and uncorks on setImmediate', async () => {
    const socket = fakeSocket();
    const coalescer = new TurnCoalescer(socket);
    coalescer.hold(100);
    expect(socket.log).toEqual(['cork']);
    await nextTick();
    coalescer.hold(100);
    expect(socket.log).toEqual(['cork']);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork']);
  });

  it('corks again in a later turn', async () => {
    const socket = fakeSocket();
    const coalescer = new TurnCoalescer(socket);
    coalescer.hold(1);
    await nextTurn();
    coalescer.hold(1);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });

  it('does not start a batch for a frame over the size limit, but one joins a batch already held', async () => {
    const socket = fakeSocket();
    const coalescer = new TurnCoalescer(socket);
    coalescer.hold(COALESCE_MAX_BYTES + 1);
    expect(socket.log).toEqual([]);
    coalescer.hold(1);
    coalescer.hold(COALESCE_MAX_BYTES + 1);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork']);
  });

  it('flushes a full batch and starts the next one in the same turn', async () => {
    const socket = fakeSocket();
    const coalescer = new TurnCoalescer(socket);
    for (let i = 0; i < COALESCE_MAX_FRAMES + 1; i++) coalescer.hold(1);
    expect(socket.log).toEqual(['cork', 'uncork', 'cork']);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork', 'cork', 'uncork']);
  });

  it('close flushes what is held at once and leaves no flush scheduled', async () => {
    const socket = fakeSocket();
    const coalescer = new TurnCoalescer(socket);
    coalescer.hold(1);
    coalescer.close();
    expect(socket.log).toEqual(['cork', 'uncork']);
    await nextTurn();
    expect(socket.log).toEqual(['cork', 'uncork']);
    coalescer.close();
    expect(socket.log).toEqual(['cork', 'uncork']);
  });

  it('on a real stream, the frames of a turn reach the stream in one writev, in order', async () => {
    const { Writable } = await import('node:stream');
    const batches: string[][] = [];
    const stream = new Writable({
      writev(chunks, callback) {
        batches.push(chunks.map((c) => String(c.chunk)));
        callback();
      },
      write(chunk, _encoding, callback) {
        batches.push([String(chunk)]);
        callback();
      },
    });
    const coalescer = new TurnCoalescer(stream);
    const write = (text: string): void => {
      coalescer.hold(text.length);
      stream.write(text);
    };
    write('a');
    await nextTick();
    write('b');
    await Promise.resolve();
    write('c');
    expect(batches).toEqual([]);
    await nextTurn();
    expect(batches).toEqual([['a', 'b', 'c']]);
  });
});
