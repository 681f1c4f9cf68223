/**
 * The fault proxy alone, in front of a plain TCP echo server: each fault does what its docstring
 * says, per connection and for all.
 */
import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startProxy, waitUntil } from '@toolwire/testing';

let echo: Server;
const upstreams = new Set<Socket>();

beforeAll(async () => {
  echo = createServer((socket) => {
    upstreams.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => upstreams.delete(socket));
    socket.on('data', (d) => socket.write(d));
    socket.on('end', () => socket.end());
  });
  echo.listen(0, '127.0.0.1');
  await once(echo, 'listening');
});

afterAll(async () => {
  for (const s of upstreams) s.destroy();
  await new Promise((resolve) => echo.close(resolve));
});

interface Client {
  socket: Socket;
  received: () => string;
  ended: Promise<'end' | 'reset' | 'close'>;
}

async function dial(proxy: FaultProxy): Promise<Client> {
  const socket = connect(proxy.port, '127.0.0.1');
  let data = '';
  socket.setEncoding('utf8').on('data', (d: string) => (data += d));
  const ended = new Promise<'end' | 'reset' | 'close'>((resolve) => {
    socket.on('end', () => resolve('end'));
    socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNRESET' ? 'reset' : 'close'));
    socket.on('close', () => resolve('close'));
  });
  await once(socket, 'connect');
  return { socket, received: () => data, ended };
}

const withProxy = async (body: (proxy: FaultProxy) => Promise<void>): Promise<void> => {
  const proxy = await startProxy({ port: (echo.address() as AddressInfo).port });
  try {
    await body(proxy);
  } finally {
    await proxy.close();
  }
};

describe('FaultProxy', () => {
  it('passes bytes both ways unchanged when healthy', () =>
    withProxy(async (proxy) => {
      const c = await dial(proxy);
      c.socket.write('hello');
      await waitUntil(() => c.received() === 'hello', 'the echo');
      c.socket.destroy();
    }));

  it('latency holds every chunk at least the given time, in order', () =>
    withProxy(async (proxy) => {
      proxy.latency(150, 20);
      const c = await dial(proxy);
      const sent = performance.now();
      for (const part of ['a', 'b', 'c', 'd']) c.socket.write(part);
      await waitUntil(() => c.received() === 'abcd', 'the echo in order', { timeoutMs: 10_000 });
      // both directions are held: at least 2 × (150 − 20) ms
      expect(performance.now() - sent).toBeGreaterThanOrEqual(2 * 130 - 5);
      c.socket.destroy();
    }));

  it('bandwidth paces the bytes: 4 KiB at 8 KiB/s each way takes at least ~0.4 s', () =>
    withProxy(async (proxy) => {
      proxy.bandwidth(8 * 1024);
      const c = await dial(proxy);
      const sent = performance.now();
      c.socket.write('x'.repeat(4096));
      await waitUntil(() => c.received().length === 4096, 'the echo', { timeoutMs: 20_000 });
      expect(performance.now() - sent).toBeGreaterThanOrEqual(400);
      c.socket.destroy();
    }));

  it('blackhole swallows bytes and passes no FIN; heal lets new bytes through again', () =>
    withProxy(async (proxy) => {
      const c = await dial(proxy);
      proxy.blackhole();
      c.socket.write('lost');
      c.socket.end(); // a FIN the upstream must never see
      const sawEnd = await Promise.race([c.ended, new Promise((r) => setTimeout(r, 300, 'nothing'))]);
      expect(sawEnd).toBe('nothing');
      expect(c.received()).toBe('');
      expect(proxy.connections).toHaveLength(1);
      proxy.heal();
      const d = await dial(proxy);
      d.socket.write('back');
      await waitUntil(() => d.received() === 'back', 'the echo after heal');
      c.socket.destroy();
      d.socket.destroy();
    }));

  it('reset sends an RST to the client', () =>
    withProxy(async (proxy) => {
      const c = await dial(proxy);
      await waitUntil(() => proxy.connections.length === 1, 'the connection');
      proxy.reset();
      expect(await c.ended).toBe('reset');
    }));

  it('closeAfter(bytes) lets that many bytes through, then FINs', () =>
    withProxy(async (proxy) => {
      const c = await dial(proxy);
      await waitUntil(() => proxy.connections.length === 1, 'the connection');
      proxy.connections[0]!.closeAfter(9); // 6 bytes out + 3 echoed back
      c.socket.write('abcdef');
      expect(await c.ended).toBe('end');
      expect(c.received()).toBe('abc');
    }));

  it('slowClose delays the FIN by the given time while bytes still flow', () =>
    withProxy(async (proxy) => {
      proxy.slowClose(300);
      const c = await dial(proxy);
      c.socket.write('ping');
      await waitUntil(() => c.received() === 'ping', 'the echo');
      const at = performance.now();
      c.socket.end();
      await c.ended;
      // the FIN waits 300 ms each way (client → echo, echo → client)
      expect(performance.now() - at).toBeGreaterThanOrEqual(2 * 300 - 5);
    }));

  it('a fault on one connection leaves the others alone', () =>
    withProxy(async (proxy) => {
      const a = await dial(proxy);
      await waitUntil(() => proxy.connections.length === 1, 'the first connection');
      const b = await dial(proxy);
      await waitUntil(() => proxy.connections.length === 2, 'the second connection');
      proxy.connections[0]!.blackhole();
      a.socket.write('a');
      b.socket.write('b');
      await waitUntil(() => b.received() === 'b', 'the echo on the healthy connection');
      expect(a.received()).toBe('');
      a.socket.destroy();
      b.socket.destroy();
    }));

  it('refuse resets new connections until heal', () =>
    withProxy(async (proxy) => {
      proxy.refuse();
      const refused = connect(proxy.port, '127.0.0.1');
      const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
      expect(error.code).toBe('ECONNRESET');
      proxy.heal();
      const d = await dial(proxy);
      d.socket.write('ok');
      await waitUntil(() => d.received() === 'ok', 'the echo');
      d.socket.destroy();
    }));

  it('caller misuse throws at once', () =>
    withProxy(async (proxy) => {
      expect(() => proxy.latency(-1)).toThrow(RangeError);
      expect(() => proxy.bandwidth(0)).toThrow(RangeError);
      expect(() => proxy.closeAfter(1.5)).toThrow(RangeError);
    }));
});
