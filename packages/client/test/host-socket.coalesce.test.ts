/**
 * When the host socket's frames reach the kernel: an answer written while a server frame is handled
 * leaves at once (a lone call's round trip waits on it); the rest of that tick's frames leave
 * together at the tick's end; frames written elsewhere (e.g. from an MCP server's output) are held
 * until the end of the event loop's turn, so every read of that turn shares one syscall.
 */
import { Socket } from 'node:net';
import type { ResultMessage } from '@toolwire/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HostSocket } from '../src/connection/host-socket.js';
import type { SessionMessage } from '../src/connection/host-socket-options.js';
import { FakeServer } from './helpers/fake-server.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

function result(id: string): ResultMessage {
  return { type: 'result', id, stdout: id, stderr: '', exitCode: 0 };
}

/** Resolves after the current turn's check phase (a `setImmediate` queued now has run). */
function afterTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

describe('HostSocket frame coalescing', () => {
  let server: FakeServer | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await server?.close();
    server = undefined;
  });

  it('writes the first answer to a server frame at once, the rest of its tick at the tick end, and frames written outside a server frame at the turn end', async () => {
    server = await FakeServer.start();
    // Every flush of a socket's buffered writes (ws writes a frame as header + payload, so each frame ends in one).
    const writes = vi.spyOn(Socket.prototype as unknown as { _writev: (...args: unknown[]) => void }, '_writev');
    const seen: Record<string, number> = {};
    let heldOutside: Promise<{ atSend: number; afterTick: number }> | undefined;
    let socket!: HostSocket;
    let closed!: () => void;
    const ended = new Promise<void>((resolve) => (closed = resolve));
    const onMessage = (message: SessionMessage): void => {
      if (message.type !== 'call') return;
      const before = writes.mock.calls.length;
      socket.send(result(`${message.id}-a`));
      seen.first = writes.mock.calls.length - before;
      socket.send(result(`${message.id}-b`));
      socket.send(result(`${message.id}-c`));
      seen.rest = writes.mock.calls.length - before;
      process.nextTick(() => (seen.afterTick = writes.mock.calls.length - before));
      // Outside any server frame (as a frame made from an MCP server's output would be): held to the turn's end.
      heldOutside = new Promise((resolve) =>
        setImmediate(() => {
          const start = writes.mock.calls.length;
          socket.send(result(`${message.id}-d`));
          const atSend = writes.mock.calls.length - start;
          process.nextTick(() => resolve({ atSend, afterTick: writes.mock.calls.length - start }));
        }),
      );
    };
    socket = new HostSocket(
      { url: server.url, hello: { type: 'hello', protocol: 1 }, maxPayload: 1 << 20, welcomeTimeoutMs: 5_000, closeWaitMs: 100, logger: silent },
      { onWelcome() {}, onMessage, onClose: () => closed() },
    );
    try {
      const conn = await server.nextConnection();
      await vi.waitFor(() => expect(socket.welcome).toBeDefined());
      conn.send({ type: 'call', id: 'c1', tool: 't', input: {}, workspace: '', agent: 'a', deadlineMs: 1_000 });
      await vi.waitFor(() => expect(heldOutside).toBeDefined());
      const outside = await heldOutside!;
      await afterTurn();
      expect(seen).toEqual({ first: 1, rest: 1, afterTick: 2 });
      expect(outside).toEqual({ atSend: 0, afterTick: 0 });
      for (const id of ['c1-a', 'c1-b', 'c1-c', 'c1-d']) expect((await conn.next('result')).id).toBe(id);
    } finally {
      socket.terminate();
      await ended;
    }
  });
});
