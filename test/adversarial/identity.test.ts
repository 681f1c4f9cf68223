/**
 * Issue 3 §7 — identity races. The same host identity connects again while its old socket is
 * half-open (a stopped process, or a socket that no longer reads) with calls pending: the old calls
 * settle 69 at once and are never replayed, nothing the old socket sends afterwards is accepted, and
 * the old socket's late close never removes the new session.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { RoutedCapture } from '@toolwire/server';
import { WebSocket } from 'ws';
import { type TestServer, closeAll, startHost, startServer, waitForCallInFlight } from '@toolwire/testing';
import { cleanup, defer, rawHost, tempDir, text } from '../helpers.js';
import { ADVERSARIAL_TOOLS, SLOW, drivenHost, killAll, pidsIn, recordingLogger, running, trackServerSockets, waitFor, type DrivenHost } from './harness.js';

afterEach(cleanup);
afterAll(closeAll);

function route(started: TestServer, name: string, tag = name, input: Record<string, unknown> = {}) {
  const out = { count: 0, pending: undefined as unknown as Promise<RoutedCapture> };
  out.pending = started.server.router
    .route({ id: tag, name, input: { tag, ...input }, workspace: '', agent: 'agent', signal: new AbortController().signal })
    .then((c) => {
      out.count++;
      return c!;
    });
  return out;
}

/** The new session is bound: alpha__slow answers from `fresh`, and nothing else of alpha is listed. */
async function expectNewSessionServes(started: TestServer, fresh: DrivenHost, tag: string): Promise<void> {
  expect(
    started.server.router
      .tools()
      .filter((t) => t.name.startsWith('alpha__'))
      .map((t) => t.name),
  ).toEqual(['alpha__slow']);
  const frame = fresh.nextCall(tag);
  const call = route(started, 'alpha__slow', tag);
  fresh.answer((await frame).id as string, `new ${tag}`);
  expect(text((await call.pending).stdout)).toBe(`new ${tag}`);
}

describe('the same host connects again while the old socket is half-open', () => {
  it('old host process stopped (SIGSTOP) with calls pending: they settle 69 at the new hello, are never replayed, and the old socket’s late close keeps the new session', async () => {
    const log = recordingLogger();
    await using started = await startServer({ logger: log.logger });
    const piddir = await tempDir();
    await using old = await startHost(started, ADVERSARIAL_TOOLS, { name: 'alpha', process: true, env: { PIDDIR: piddir } });
    const oldLink = await old.net.nextConnection({ existing: true });
    // `late` answers only after a minute: all three calls are surely in flight when the host stops, however slow the machine.
    const calls = [route(started, 'alpha__wait', 'w1'), route(started, 'alpha__late', 'l1', { ms: 60_000 }), route(started, 'alpha__tree', 't1')];
    const pids = await pidsIn(join(piddir, 'pids'), 2);
    defer(() => killAll(pids));
    await waitForCallInFlight(started, { host: 'alpha', count: 3 });
    old.pause(); // SIGSTOP — half-open: the kernel keeps the connection, nobody reads or answers

    const fresh = await drivenHost(started); // hello → the old session is replaced
    const replacedAt = performance.now();
    const results = await Promise.all(calls.map((c) => c.pending));
    for (const capture of results) {
      expect(capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
      expect(text(capture.stderr)).toBe('toolwire: host alpha was replaced by a newer connection (close 4000 REPLACED)\n');
    }
    expect(performance.now() - replacedAt).toBeLessThan(1_000);
    expect(fresh.calls.size).toBe(0); // never replayed
    await expectNewSessionServes(started, fresh, 'a');

    // The old process dies; the server sees its socket go only now. The new session stays.
    expect(oldLink.open).toBe(true);
    expect(old.net.accepted).toBe(1);
    await old.kill('SIGKILL');
    await oldLink.closed; // the proxy passed the close on to the server
    await waitFor(() => started.server.hostEndpoint.sessionCount === 1, 'the old session to be gone from the endpoint');
    expect(started.server.router.hosts().map((h) => h.name)).toEqual(['alpha']);
    await expectNewSessionServes(started, fresh, 'b');
    expect(fresh.calls.size).toBe(2);
    expect(calls.every((c) => c.count === 1)).toBe(true);
    await waitFor(() => pids.every((pid) => !running(pid)), 'the old host’s tool processes to be reaped', 2_000);
    expect(log.errors()).toEqual([]);
  });

  it('an old socket that stopped reading keeps writing after it was replaced: its advertise, results and hello are ignored, and its late close keeps the new session', async () => {
    const sockets = trackServerSockets();
    const log = recordingLogger();
    await using started = await startServer({ logger: log.logger });
    const old = await drivenHost(started);
    const calls = [route(started, 'alpha__slow', 'o1'), route(started, 'alpha__slow', 'o2')];
    await waitFor(() => old.calls.size === 2, 'the old call frames');
    const oldIds = [...old.calls.keys()];
    const oldSocket = (old.ws as unknown as { _socket: Socket })._socket;
    const oldServerSide = sockets.find((t) => t.socket.remotePort === oldSocket.localPort)!.socket;
    oldSocket.pause(); // it will not see the 4000 close frame

    const fresh = await drivenHost(started);
    for (const capture of await Promise.all(calls.map((c) => c.pending))) expect(capture.exitCode).toBe(69);

    // Frames the old socket sends now reach the server (its TCP connection is open) and change nothing.
    const [readBase, writtenBase] = [oldServerSide.bytesRead, oldSocket.bytesWritten];
    old.ws.send(JSON.stringify({ type: 'advertise', tools: [{ name: 'hijack', inputSchema: { type: 'object' } }] }));
    for (const id of oldIds) old.answer(id, 'late from the old socket');
    old.ws.send(JSON.stringify({ type: 'hello', protocol: 1 }));
    old.ws.send('garbage that would be a protocol violation');
    // ws handles frames synchronously as they are read: once the server read every byte, it handled them.
    await waitFor(() => oldServerSide.bytesRead - readBase >= oldSocket.bytesWritten - writtenBase, 'the server to read the old socket’s frames');
    await expectNewSessionServes(started, fresh, 'c');
    expect(started.server.router.tools().some((t) => t.name === 'alpha__hijack')).toBe(false);
    expect(calls.every((c) => c.count === 1)).toBe(true);

    // Its late close: the new session stays bound and serving.
    const closed = once(old.ws, 'close');
    oldSocket.destroy();
    await closed;
    await waitFor(() => started.server.hostEndpoint.sessionCount === 1, 'the old session to be gone from the endpoint');
    await expectNewSessionServes(started, fresh, 'd');
    expect(fresh.ws.readyState).toBe(WebSocket.OPEN);
    expect(log.errors()).toEqual([]);
  });

  it('two connections of one host saying hello in the same tick: exactly one is bound, the other is closed 4000', async () => {
    await using started = await startServer();
    const token = await started.hostToken('alpha');
    const a = await rawHost(started.url, token);
    const b = await rawHost(started.url, token);
    const closes = [a, b].map((ws) => once(ws, 'close').then(([code]) => code as number));
    const hello = JSON.stringify({ type: 'hello', protocol: 1 });
    a.send(hello);
    b.send(hello);
    const first = await Promise.race(closes);
    expect(first).toBe(4000);
    await waitFor(() => started.server.router.hosts().length === 1, 'one bound session');
    expect([a.readyState, b.readyState].filter((s) => s === WebSocket.OPEN)).toHaveLength(1);
    const survivor = a.readyState === WebSocket.OPEN ? a : b;
    const advertised = new Promise((resolve) => survivor.on('message', (d: Buffer) => JSON.parse(d.toString()).type === 'advertised' && resolve(true)));
    survivor.send(JSON.stringify({ type: 'advertise', tools: [SLOW] }));
    await advertised;
    expect(started.server.router.tools().map((t) => t.name)).toEqual(['alpha__slow']);
  });
});
