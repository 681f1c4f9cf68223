import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { join } from 'node:path';
import { type TestServer, closeAll, startHost, startServer, waitForCallInFlight } from '@toolwire/testing';
import { cleanup, rawAdvertise, rawHost, repoRoot, text, waitFor } from '../helpers.js';
import { NATS_SERVER, clusterHosts, fixtureHost, startNats } from './nats.js';

afterEach(async () => {
  await closeAll(); // servers and hosts before their NATS (in cleanup)
  await cleanup();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read each outcome's fields directly
const run = (started: TestServer, name: string, input: unknown = {}, extra: object = {}): Promise<any> => started.call(name, input, extra);

async function twoNodes(heartbeatMs = 200): Promise<{ a: TestServer; b: TestServer; nats: Awaited<ReturnType<typeof startNats>> }> {
  const nats = await startNats();
  const hosts = clusterHosts();
  const a = await startServer({ hosts, cluster: { nats: [nats.url], name: 't', node: 'a', heartbeatMs } });
  const b = await startServer({ hosts, cluster: { nats: [nats.url], name: 't', node: 'b', heartbeatMs } });
  return { a, b, nats };
}

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: two server nodes act as one', () => {
  it('lists on node B the tools of a host connected to node A, and routes B’s calls to it', async () => {
    const { a, b } = await twoNodes();
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__echo'), 'node b to list alpha__echo');
    expect(b.server.router.hosts().find((h) => h.name === 'alpha')?.node).toBe('a');

    const echo = await run(b, 'alpha__echo', { hello: 'cluster' });
    expect(echo.capture.exitCode).toBe(0);
    expect(text(echo.capture.stdout)).toBe('{"hello":"cluster"}');

    const exit3 = await run(b, 'alpha__exit3');
    expect(exit3.capture.exitCode).toBe(3);
    expect(text(exit3.capture.stderr)).toBe('err\n');

    const refused = await run(b, 'alpha__strict', { n: 'x' });
    expect(refused.capture.exitCode).toBe(ExitCode.DATA_ERR);
  });

  it('a deadline on node B ends the remote call 124, and a stop on B ends it 130 with the host’s partial output', async () => {
    const { a, b } = await twoNodes();
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__wait'), 'node b to list alpha__wait');
    const late = await run(b, 'alpha__wait', {}, { deadlineMs: 300 });
    expect(late.capture.exitCode).toBe(ExitCode.TIMEOUT);

    const controller = new AbortController();
    const pending = run(b, 'alpha__wait', {}, { signal: controller.signal });
    await waitFor(() => a.server.router.hosts().find((h) => h.name === 'alpha')?.inFlight === 1, 'the call to reach the host on node a');
    controller.abort();
    const stopped = await pending;
    expect(stopped.capture.exitCode).toBe(ExitCode.CANCELLED);
    expect(text(stopped.capture.stdout)).toBe('partial\n');
  });

  it('a host killed on node A settles node B’s call 69, and its tools leave node B', async () => {
    const { a, b } = await twoNodes();
    const host = await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__wait'), 'node b to list alpha__wait');
    const pending = run(b, 'alpha__wait');
    await waitForCallInFlight(a, { host: 'alpha' });
    await host.kill('SIGKILL');
    const lost = await pending;
    expect(lost.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
    await waitFor(() => !b.server.router.tools().some((t) => t.name === 'alpha__wait'), 'alpha’s tools to leave node b');
  });

  it('node A lost (its NATS connection gone for good) settles B’s calls 69 within the bound and removes its hosts’ tools', async () => {
    const { a, b } = await twoNodes(200);
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__wait'), 'node b to list alpha__wait');
    const pending = run(b, 'alpha__wait');
    await waitFor(() => a.server.router.hosts().find((h) => h.name === 'alpha')?.inFlight === 1, 'the call to reach the host');
    // Node A leaves abruptly from B's view: it stops hearing and answering (SIGSTOP of a real node is in the process tests).
    const started = Date.now();
    await a.close();
    const lost = await pending;
    expect(lost.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
    await waitFor(() => !b.server.router.tools().some((t) => t.name === 'alpha__wait'), 'alpha’s tools to leave node b', 2_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('the same host identity connecting to node B takes it from node A (4000 there), and every node routes to the new session only', async () => {
    const { a, b } = await twoNodes();
    await fixtureHost(a);
    await waitFor(() => b.server.router.hosts().find((h) => h.name === 'alpha')?.node === 'a', 'node b to see alpha on a');
    await fixtureHost(b);
    await waitFor(() => a.server.router.hosts().find((h) => h.name === 'alpha' && h.node === 'b' && h.tools.includes('alpha__echo')), 'node a to list alpha on b');
    expect(b.server.router.hosts().find((h) => h.name === 'alpha')?.node).toBeUndefined();
    // The first host process was closed 4000 (replaced) on node a and does not come back.
    await waitFor(() => a.server.router.hosts().find((h) => h.name === 'alpha')?.node === 'b', 'the old session to end');
    expect(a.server.router.hosts().filter((h) => h.name === 'alpha')).toHaveLength(1);
    const echo = await run(a, 'alpha__echo', { via: 'a' });
    expect(echo.capture.exitCode).toBe(0);
  });
});

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: stop', () => {
  it('stop(agent) on node B stops that agent’s calls made through node A (130), and other agents’ calls run on', async () => {
    const { a, b } = await twoNodes();
    await fixtureHost(a);
    const mine = run(a, 'alpha__wait', {}, { agent: 'agent' });
    const theirs = run(a, 'alpha__wait', {}, { agent: 'other', deadlineMs: 3_000 });
    await waitFor(() => a.server.router.hosts().find((h) => h.name === 'alpha')?.inFlight === 2, 'both calls to reach the host');
    expect(b.server.executor.stop('agent')).toBe(0); // none of its calls run through node b
    expect((await mine).capture.exitCode).toBe(ExitCode.CANCELLED);
    expect((await theirs).capture.exitCode).toBe(ExitCode.TIMEOUT);
  }, 60_000);
});

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: live output across nodes', () => {
  it('streams a remote tool’s output to node B’s listener in order, and the capture is complete', async () => {
    const { a, b } = await twoNodes();
    await startHost(a, join(repoRoot, 'test', 'fixtures', 'live-tools.json'), { name: 'beta', process: true, hostOptions: { reconnect: false } });
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'beta__ticker'), 'node b to list beta__ticker', 20_000);
    const chunks: string[] = [];
    const result = await run(b, 'beta__ticker', {}, { onOutput: (c: { bytes: Uint8Array }) => void chunks.push(text(c.bytes)) });
    expect(result.capture.exitCode).toBe(0);
    expect(chunks.join('')).toContain('line 1\n');
    expect(text(result.capture.stdout)).toBe('line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n');
  }, 60_000);
});

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: naming bare', () => {
  it('a bare-name collision between hosts on different nodes resolves the same way on every node: the first host keeps the name', async () => {
    const nats = await startNats();
    const options = { naming: 'bare' as const, cluster: { nats: [nats.url], name: 'n', heartbeatMs: 200 } };
    const hosts = clusterHosts();
    const a = await startServer({ ...options, hosts, cluster: { ...options.cluster, node: 'a' } });
    const b = await startServer({ ...options, hosts, cluster: { ...options.cluster, node: 'b' } });
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'echo'), 'node b to list echo (alpha’s, on a)', 20_000);
    // beta on node b advertises echo too, and a name of its own.
    const beta = await rawHost(b.url, await b.hostToken('beta'));
    const reply = await rawAdvertise(beta, [
      { name: 'echo', inputSchema: { type: 'object' } },
      { name: 'only_beta', inputSchema: { type: 'object' } },
    ]);
    expect(reply.accepted).toEqual([{ name: 'only_beta', as: 'only_beta' }]);
    expect(JSON.stringify(reply.rejected)).toMatch(/"echo".*already advertised by/);
    await waitFor(() => a.server.router.tools().some((t) => t.name === 'only_beta'), 'node a to list only_beta');
    for (const node of [a, b]) {
      const owners = new Map(node.server.router.hosts().flatMap((h) => h.tools.map((t) => [t, h.name] as const)));
      expect(owners.get('echo')).toBe('alpha');
      expect(owners.get('only_beta')).toBe('beta');
    }
  }, 60_000);

  it('two hosts on two nodes advertising one bare name at the same moment: exactly one gets it, and both nodes agree', async () => {
    const nats = await startNats();
    const cluster = { nats: [nats.url], name: 'race', heartbeatMs: 200 };
    const hosts = clusterHosts();
    const a = await startServer({ naming: 'bare', hosts, cluster: { ...cluster, node: 'a' } });
    const b = await startServer({ naming: 'bare', hosts, cluster: { ...cluster, node: 'b' } });
    const [alpha, beta] = await Promise.all([rawHost(a.url, await a.hostToken('alpha')), rawHost(b.url, await b.hostToken('beta'))]);
    const tools = [{ name: 'same', inputSchema: { type: 'object' } }];
    const [ra, rb] = await Promise.all([rawAdvertise(alpha, tools), rawAdvertise(beta, tools)]);
    const winners = [ra, rb].filter((r) => (r.accepted as unknown[]).length === 1);
    expect(winners).toHaveLength(1);
    const winner = winners[0] === ra ? 'alpha' : 'beta';
    for (const node of [a, b]) {
      await waitFor(() => node.server.router.hosts().find((h) => h.tools.includes('same'))?.name === winner, `both nodes to give "same" to ${winner}`);
    }
  }, 60_000);
});
