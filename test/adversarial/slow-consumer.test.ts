/**
 * Issue 3 §6 — a slow consumer. A host stops reading its socket while the server sends it large
 * inputs: once the bytes buffered for it pass `maxBufferedBytesPerHost`, new calls to it settle 75
 * at once; what the server holds for it stays bounded by the limit plus one frame; other hosts are
 * unaffected; and once it reads again, it drains and is served again. The hosts are
 * @toolwire/testing rogue hosts driven by hand.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import type { RoutedCapture } from '@toolwire/server';
import { closeAll, startRogueHost, startServer } from '@toolwire/testing';
import { cleanup, text } from '../helpers.js';
import { serverSideOf, trackServerSockets, waitFor } from './harness.js';

afterEach(async () => {
  await closeAll();
  await cleanup();
});

const LIMIT = 1024 * 1024;
const INPUT_BYTES = 256 * 1024;

describe('slow consumer', () => {
  it('new calls settle 75 once the host’s buffered bytes pass the limit; memory stays bounded; other hosts are unaffected', async () => {
    const sockets = trackServerSockets();
    const started = await startServer({ maxBufferedBytesPerHost: LIMIT, maxPayload: 4 * 1024 * 1024 });
    const alpha = await startRogueHost(started, { name: 'alpha', tools: [{ name: 'slow', inputSchema: { type: 'object' } }] });
    const beta = await startRogueHost(started, { name: 'beta', tools: [{ name: 'other', inputSchema: { type: 'object' } }] });
    const clientSocket = (alpha.ws as unknown as { _socket: Socket })._socket;
    const serverSocket = (await waitFor(() => serverSideOf(sockets, clientSocket.localPort!), 'alpha’s server-side socket')).socket;
    clientSocket.pause(); // alpha stops reading: kernel buffers fill, then the server's send buffer grows

    const route = (name: string, input: unknown, controller = new AbortController()) =>
      started.router.route({ id: 'x', name, input, workspace: '', agent: 'agent', signal: controller.signal });
    const payload = { blob: 'x'.repeat(INPUT_BYTES) };
    const frameBytes = INPUT_BYTES + 200;
    const sent: { pending: Promise<RoutedCapture | undefined>; controller: AbortController }[] = [];
    let refused: RoutedCapture | undefined;
    let peak = 0;
    for (let i = 0; i < 1_000 && refused === undefined; i++) {
      const controller = new AbortController();
      const pending = route('alpha__slow', payload, controller);
      // A refusal is settled at once: it wins a race against the next macrotask.
      const now = await Promise.race([pending, new Promise<'pending'>((r) => setImmediate(() => r('pending')))]);
      if (now !== 'pending') refused = now;
      else sent.push({ pending, controller });
      peak = Math.max(peak, serverSocket.writableLength);
    }
    expect(refused).toBeDefined();
    expect(refused).toMatchObject({ exitCode: 75, failure: 'overloaded' });
    expect(text(refused!.stderr)).toMatch(new RegExp(`^toolwire: host alpha is overloaded: \\d+ bytes buffered \\(limit ${LIMIT}\\); retry later\\n$`));
    // The server stopped queueing for alpha at the limit: at most the limit plus the frame that crossed it.
    expect(serverSocket.writableLength).toBeGreaterThan(LIMIT);
    expect(peak).toBeLessThanOrEqual(LIMIT + frameBytes);

    // Keep calling: every call is refused at once and the buffer does not grow.
    const rssBefore = process.memoryUsage().rss;
    for (let i = 0; i < 200; i++) expect((await route('alpha__slow', payload))!.exitCode).toBe(75);
    expect(serverSocket.writableLength).toBeLessThanOrEqual(LIMIT + frameBytes);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * 1024 * 1024);

    // beta is served meanwhile.
    const betaFrame = beta.nextCall();
    const betaCall = route('beta__other', { small: true });
    beta.result((await betaFrame).id, { stdout: 'beta ok' });
    expect(text((await betaCall)!.stdout)).toBe('beta ok');

    // alpha reads again: everything queued arrives, its calls are answered, and new calls are accepted.
    alpha.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as { type: string; id: string };
      if (frame.type === 'call') alpha.result(frame.id, { stdout: 'drained' });
    });
    clientSocket.resume();
    for (const { pending } of sent) expect(text((await pending)!.stdout)).toBe('drained');
    await waitFor(() => serverSocket.writableLength === 0, 'alpha’s buffer to drain');
    expect(text((await route('alpha__slow', { small: true }))!.stdout)).toBe('drained');
    expect(started.router.hosts().every((h) => h.inFlight === 0)).toBe(true);
  });
});
