/**
 * Issue 3 §1–2 — a peer that dies and a peer that goes silent, with real tool-host processes
 * (@toolwire/testing hosts, each dialling through its own fault proxy). Times are measured from the
 * moment that matters: the proxy seeing the host's side of the TCP connection go for a death; a
 * SIGSTOP placed half a heartbeat after the host's last pong (read on the proxy) for a silent peer.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { ExecuteResult } from '@toolwire/server';
import { type TestServer, closeAll, startHost, startProxy, startServer, waitForCallInFlight } from '@toolwire/testing';
import { cleanup, defer, tempDir, text } from '../helpers.js';
import { ADVERSARIAL_TOOLS, drivenHost, killAll, pidsIn, running, waitFor } from './harness.js';

afterEach(cleanup);
afterAll(closeAll);

type Completed = Extract<ExecuteResult, { outcome: 'completed' }>;

/** Execute `name` and note when it settled (performance.now()). */
function timed(started: TestServer, name: string, input: unknown = {}, extra: Record<string, unknown> = {}) {
  const entry = { settledAt: 0, count: 0, result: undefined as unknown as Promise<Completed> };
  entry.result = started.server.executor.execute({ name, input, agent: 'agent', ...extra }).then((r) => {
    entry.settledAt = performance.now();
    entry.count++;
    return r as Completed;
  });
  return entry;
}

const inFlightOf = (started: TestServer, host: string) => started.server.router.hosts().find((h) => h.name === host)?.inFlight ?? 0;

describe('peer death', () => {
  it('a host killed with SIGKILL mid-call: every pending call of it settles 69 within 100 ms of the socket close; other hosts keep working', async () => {
    await using started = await startServer();
    const piddir = await tempDir();
    await using alpha = await startHost(started, ADVERSARIAL_TOOLS, { name: 'alpha', process: true, env: { PIDDIR: piddir } });
    await using beta = await startHost(started, ADVERSARIAL_TOOLS, { name: 'beta', process: true });
    const alphaLink = await alpha.net.nextConnection({ existing: true });
    const calls = [timed(started, 'alpha__wait'), timed(started, 'alpha__wait'), timed(started, 'alpha__late', { ms: 60_000 }), timed(started, 'alpha__tree')];
    const betaCall = timed(started, 'beta__wait');
    const pids = await pidsIn(join(piddir, 'pids'), 2);
    defer(() => killAll(pids));
    await waitFor(() => inFlightOf(started, 'alpha') === 4 && inFlightOf(started, 'beta') === 1, 'all calls in flight');
    expect(alphaLink.clientGoneAt).toBeUndefined();

    await alpha.kill('SIGKILL');
    const results = await Promise.all(calls.map((c) => c.result));

    expect(alpha.net.accepted).toBe(1);
    const closedAt = alphaLink.clientGoneAt!;
    expect(closedAt).toBeDefined();
    for (const [i, r] of results.entries()) {
      expect(r.capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
      expect(text(r.capture.stderr)).toMatch(/^toolwire: host alpha disconnected \(close 1006 ABNORMAL_CLOSURE\)\n$/);
      expect(calls[i]!.count).toBe(1);
      expect(calls[i]!.settledAt - closedAt).toBeLessThan(100);
    }
    await waitFor(() => !started.server.router.tools().some((t) => t.name.startsWith('alpha__')), 'alpha’s tools to leave');
    // The dead host's running tool (a tree in its own process group) does not outlive it: the host's
    // orphan reaper sees the host go and kills the group.
    await waitFor(() => pids.every((pid) => !running(pid)), 'the killed host’s tool processes to be gone', 2_000);
    // beta is untouched: its call is still in flight, it answers a new one, and its stop returns partial output.
    expect(inFlightOf(started, 'beta')).toBe(1);
    const echo = (await started.server.executor.execute({ name: 'beta__echo', input: { n: 1 }, agent: 'agent' })) as Completed;
    expect(text(echo.capture.stdout)).toBe('{"n":1}');
    started.server.executor.stop('agent');
    const stopped = await betaCall.result;
    expect(stopped.capture.exitCode).toBe(130);
    expect(text(stopped.capture.stdout)).toBe('partial\n');
    expect(running(beta.pid!)).toBe(true);
  });

  it('a host whose connection is reset (RST) settles its calls 69 as promptly', async () => {
    await using started = await startServer();
    await using net = await startProxy(started.url);
    const alpha = await drivenHost(started, undefined, 'alpha', net.url);
    const calls = [timed(started, 'alpha__slow'), timed(started, 'alpha__slow')];
    await waitFor(() => alpha.calls.size === 2, 'the call frames');
    const closedAt = performance.now();
    net.reset();
    const results = await Promise.all(calls.map((c) => c.result));
    for (const [i, r] of results.entries()) {
      expect(r.capture.exitCode).toBe(69);
      expect(calls[i]!.settledAt - closedAt).toBeLessThan(100);
    }
  });
});

describe('silent peer', () => {
  it('a SIGSTOPped host: its calls settle 69 within 2 × heartbeat; after SIGCONT nothing from the old socket is accepted and its work is killed, not replayed', async () => {
    const HEARTBEAT = 500;
    await using started = await startServer({ heartbeatMs: HEARTBEAT });
    const piddir = await tempDir();
    // beta is an in-process raw host that keeps answering pings: silence of alpha must not touch it.
    await drivenHost(started, [{ name: 'other', inputSchema: { type: 'object' } }], 'beta');
    await using alpha = await startHost(started, ADVERSARIAL_TOOLS, { name: 'alpha', process: true, env: { PIDDIR: piddir } });
    // What alpha sends, as the proxy reads it (an extra 'data' listener only watches: the pump owns the flow).
    const alphaSide = (await alpha.net.nextConnection({ existing: true })).client;
    const calls = [timed(started, 'alpha__wait'), timed(started, 'alpha__resume'), timed(started, 'alpha__tree')];
    const pids = await pidsIn(join(piddir, 'pids'), 2);
    defer(() => killAll(pids));
    await waitForCallInFlight(started, { host: 'alpha', count: 3 });

    // Place the SIGSTOP half an interval after a pong (a masked pong frame starts with 0x8A).
    const pongAt = await new Promise<number>((resolve) => {
      const onData = (chunk: Buffer): void => {
        if (chunk[0] !== 0x8a) return;
        alphaSide.off('data', onData);
        resolve(performance.now());
      };
      alphaSide.on('data', onData);
    });
    await new Promise((r) => setTimeout(r, Math.max(0, pongAt + HEARTBEAT / 2 - performance.now())));
    const stoppedAt = performance.now();
    alpha.pause(); // SIGSTOP; close() continues it
    const results = await Promise.all(calls.map((c) => c.result));
    for (const [i, r] of results.entries()) {
      expect(r.capture).toMatchObject({ exitCode: 69, failure: 'unavailable' });
      expect(text(r.capture.stderr)).toBe(`toolwire: host alpha lost: no pong within ${HEARTBEAT} ms (heartbeat); connection terminated\n`);
      expect(calls[i]!.settledAt - stoppedAt).toBeLessThanOrEqual(2 * HEARTBEAT);
      expect(calls[i]!.count).toBe(1);
    }
    expect(started.server.router.tools().some((t) => t.name.startsWith('alpha__'))).toBe(false);
    expect(inFlightOf(started, 'beta')).toBe(0);
    expect(started.server.router.hosts().some((h) => h.name === 'beta')).toBe(true);

    // Resume: the host answers `resume` at once — on the old socket, which the server destroyed, or
    // not at all once it saw the close; either way nothing of it is accepted. The host reconnects as a
    // fresh session with nothing pending (no replay) and kills the abandoned tree.
    alpha.resume();
    await waitFor(() => started.server.router.tools().some((t) => t.name === 'alpha__echo'), 'alpha to reconnect', 10_000);
    expect(inFlightOf(started, 'alpha')).toBe(0);
    expect(calls.every((c) => c.count === 1)).toBe(true);
    await waitFor(() => pids.every((pid) => !running(pid)), 'the abandoned tree to be killed by the host', 3_000);
    const echo = (await started.server.executor.execute({ name: 'alpha__echo', input: { back: true }, agent: 'agent' })) as Completed;
    expect(text(echo.capture.stdout)).toBe('{"back":true}');
    expect(started.server.executor.inFlight).toBe(0);
  });
});
