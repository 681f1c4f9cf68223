/**
 * Issue 17 guarantees across two in-process nodes on a real nats-server, with raw hosts the test
 * drives frame by frame: when a host leaves node A, when it re-advertises there, which node keeps the
 * disk record, and what node B answers while a host is bound on A but has not advertised yet.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { type TestServer, closeAll, startServer, waitForToolsChanged } from '@toolwire/testing';
import { cleanup, nextFrame, rawAdvertise, rawHost, tempDir, waitFor } from '../helpers.js';
import { NATS_SERVER, clusterHosts, startNats } from './nats.js';

afterEach(async () => {
  await closeAll(); // servers and hosts before their NATS (in cleanup)
  await cleanup();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the expects read each outcome's fields directly
const run = (started: TestServer, name: string, input: unknown = {}, extra: object = {}): Promise<any> => started.call(name, input, extra);

const object = { type: 'object' };

async function twoNodes(extra: { a?: object; b?: object } = {}): Promise<{ a: TestServer; b: TestServer }> {
  const nats = await startNats();
  const hosts = clusterHosts();
  const cluster = { nats: [nats.url], name: 'g', heartbeatMs: 1_000 };
  const a = await startServer({ hosts, ...extra.a, cluster: { ...cluster, node: 'a' } });
  const b = await startServer({ hosts, ...extra.b, cluster: { ...cluster, node: 'b' } });
  return { a, b };
}

const lists = (node: TestServer, name: string): boolean => node.server.router.tools().some((t) => t.name === name);

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: guarantees of calls and lists across nodes', () => {
  it('a host that disconnects from node A settles node B’s in-flight call 69 within 100 ms of A seeing the close', async () => {
    const { a, b } = await twoNodes();
    const alpha = await rawHost(a.url, await a.hostToken('alpha'));
    await rawAdvertise(alpha, [{ name: 'hang', inputSchema: object }]);
    await waitFor(() => lists(b, 'alpha__hang'), 'node b to list alpha__hang');

    // A sees the close when its router learns that alpha's session ended (the session unbinds).
    let closeSeenAt: number | undefined;
    a.server.router.on('localChanged', (host: string) => {
      if (host === 'alpha' && a.server.router.linkOf('alpha') === undefined) closeSeenAt ??= performance.now();
    });
    let settledAt = 0;
    const arrived = nextFrame(alpha, 'call');
    const pending = run(b, 'alpha__hang', {}, { deadlineMs: 30_000 }).then((result: Awaited<ReturnType<typeof run>>) => ((settledAt = performance.now()), result));
    await arrived; // the call is on the host (the raw host never answers it)
    alpha.terminate();
    const lost = await pending;
    expect(lost.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
    expect(closeSeenAt).toBeDefined();
    expect(settledAt - closeSeenAt!).toBeLessThanOrEqual(100);
  });

  it('a host re-advertising a changed tool set on node A: node B’s tools() follows and B emits toolsChanged', async () => {
    const { a, b } = await twoNodes();
    const alpha = await rawHost(a.url, await a.hostToken('alpha'));
    await rawAdvertise(alpha, [
      { name: 'one', inputSchema: object },
      { name: 'two', inputSchema: object },
    ]);
    await waitFor(() => lists(b, 'alpha__one') && lists(b, 'alpha__two'), 'node b to list alpha__one and alpha__two');

    const changed = waitForToolsChanged(b);
    const reply = nextFrame(alpha, 'advertised');
    alpha.send(
      JSON.stringify({
        type: 'advertise',
        tools: [
          { name: 'one', inputSchema: object },
          { name: 'three', description: 'new', inputSchema: object },
        ],
      }),
    );
    expect((await reply).accepted).toHaveLength(2);
    await changed;
    await waitFor(() => lists(b, 'alpha__three') && !lists(b, 'alpha__two'), 'node b to list the new set');
    expect(
      b.server.router
        .tools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(['alpha__one', 'alpha__three']);
  });

  it('the disk record of a call from node B to a host on node A is written on B, not on A', async () => {
    const [recordA, recordB] = [await tempDir('toolwire-record-a-'), await tempDir('toolwire-record-b-')];
    const { a, b } = await twoNodes({ a: { recordDir: recordA }, b: { recordDir: recordB } });
    const alpha = await rawHost(a.url, await a.hostToken('alpha'));
    await rawAdvertise(alpha, [{ name: 'echo', inputSchema: object }]);
    await waitFor(() => lists(b, 'alpha__echo'), 'node b to list alpha__echo');
    alpha.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; id: string };
      if (frame.type === 'call') alpha.send(JSON.stringify({ type: 'result', id: frame.id, exitCode: 0, stdout: 'across\n', stderr: '' }));
    });
    const result = await run(b, 'alpha__echo', { n: 1 }, { id: 'across-1' });
    expect(result.capture.exitCode).toBe(0);
    expect(existsSync(join(recordB, 'agent', 'across-1', 'input.json'))).toBe(true);
    expect(existsSync(join(recordB, 'agent', 'across-1', 'output.json'))).toBe(true);
    expect(existsSync(join(recordA, 'agent'))).toBe(false);
  });

  it('a host back on node A but not yet advertised: node B answers its known tools 69 (not connected), not 127', async () => {
    const { a, b } = await twoNodes();
    const token = await a.hostToken('alpha');
    const first = await rawHost(a.url, token);
    await rawAdvertise(first, [{ name: 'echo', inputSchema: object }]);
    await waitFor(() => lists(b, 'alpha__echo'), 'node b to list alpha__echo');
    first.terminate();
    await waitFor(() => !lists(b, 'alpha__echo'), 'alpha’s tools to leave node b');

    // The same identity says hello on A again and has not advertised yet: bound on A (and on B, as A's host).
    const again = await rawHost(a.url, token);
    const welcome = nextFrame(again, 'welcome');
    again.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'raw-test' }));
    await welcome;
    await waitFor(() => b.server.router.hosts().some((h) => h.name === 'alpha' && h.node === 'a'), 'node b to see alpha bound on a');
    const early = await run(b, 'alpha__echo');
    expect(early.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
  });

  it('a new session of a host on node A (the old one replaced there) that has not advertised yet: node B answers its tools 69, not 127', async () => {
    const { a, b } = await twoNodes();
    const token = await a.hostToken('alpha');
    const first = await rawHost(a.url, token);
    await rawAdvertise(first, [{ name: 'echo', inputSchema: object }]);
    await waitFor(() => lists(b, 'alpha__echo'), 'node b to list alpha__echo');

    const second = await rawHost(a.url, token);
    const welcome = nextFrame(second, 'welcome');
    second.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'raw-test' }));
    await welcome; // the first session is closed 4000 on A, the second has no tools yet
    await waitFor(() => !lists(b, 'alpha__echo'), 'node b to drop the first session’s tools');
    const early = await run(b, 'alpha__echo');
    expect(early.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
  });

  it('one host identity bound on two nodes at once (no leases: NATS without JetStream): when its session on node A leaves, A lists the one on node B at once, not when B next changes', async () => {
    const nats = await startNats(['-js=false']); // after startNats' own -js: JetStream off, so no identity leases
    const hosts = clusterHosts();
    const cluster = { nats: [nats.url], name: 'g', heartbeatMs: 250 };
    const a = await startServer({ hosts, cluster: { ...cluster, node: 'a' } });
    const b = await startServer({ hosts, cluster: { ...cluster, node: 'b' } });
    const onA = await rawHost(a.url, await a.hostToken('alpha'));
    await rawAdvertise(onA, [{ name: 'one', inputSchema: object }]);
    await waitFor(() => lists(b, 'alpha__one'), 'node b to list alpha__one');
    // The same identity on B: each node keeps its own session (no lease evicts A's), A lists its own.
    await rawAdvertise(await rawHost(b.url, await b.hostToken('alpha')), [{ name: 'two', inputSchema: object }]);
    // B's next change after alpha's: once A lists beta, A has read alpha's session on B (and kept its own).
    await rawAdvertise(await rawHost(b.url, await b.hostToken('beta')), [{ name: 'three', inputSchema: object }]);
    await waitFor(() => lists(a, 'beta__three'), 'node a to list beta__three');
    expect(lists(a, 'alpha__one') && !lists(a, 'alpha__two')).toBe(true);

    onA.terminate();
    await waitFor(
      () => a.server.router.hosts().some((h) => h.name === 'alpha' && h.node === 'b' && h.tools.includes('alpha__two')),
      'node a to list alpha’s session on node b',
      5_000,
    );
    expect(lists(a, 'alpha__one')).toBe(false);
  });
});
