/**
 * NATS restarted under a running cluster, in-process nodes on a real nats-server: the cluster heals
 * without restarting its nodes.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { type TestServer, closeAll, startServer } from '@toolwire/testing';
import { cleanup, nextFrame, rawAdvertise, rawHost, tempDir, waitFor } from '../helpers.js';
import { NATS_SERVER, clusterHosts, startNats } from './nats.js';

afterEach(async () => {
  await closeAll(); // servers and hosts before their NATS (in cleanup)
  await cleanup();
});

const object = { type: 'object' };
const lists = (node: TestServer, name: string): boolean => node.server.router.tools().some((t) => t.name === name);

/** Nodes a and b on `nats` (heartbeat 500 ms), host alpha (raw, tool `echo`, never answering) on a and beta on b. */
async function twoNodes(url: string) {
  const hosts = clusterHosts();
  const cluster = { nats: [url], name: 'rs', heartbeatMs: 500 };
  const a = await startServer({ hosts, cluster: { ...cluster, node: 'a' } });
  const b = await startServer({ hosts, cluster: { ...cluster, node: 'b' } });
  const alphaToken = await a.hostToken('alpha');
  const alpha = await rawHost(a.url, alphaToken);
  await rawAdvertise(alpha, [{ name: 'echo', inputSchema: object }]);
  const beta = await rawHost(b.url, await b.hostToken('beta'));
  await rawAdvertise(beta, [{ name: 'echo', inputSchema: object }]);
  await waitFor(() => lists(b, 'alpha__echo') && lists(a, 'beta__echo'), 'each node to list the other’s host');
  return { a, b, alpha, alphaToken, beta };
}

/** Answer every call on raw host `ws` with exit 0 and its input as stdout. */
function answerCalls(ws: Awaited<ReturnType<typeof rawHost>>): void {
  ws.on('message', (data: Buffer) => {
    const msg = JSON.parse(data.toString('utf8')) as { type: string; id: string; input: unknown };
    if (msg.type === 'call') ws.send(JSON.stringify({ type: 'result', id: msg.id, exitCode: 0, stdout: JSON.stringify(msg.input), stderr: '' }));
  });
}

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: NATS restarted', () => {
  it('NATS killed during a call across and restarted on its port (store kept): the call ends 69, local calls run meanwhile, then lists converge, calls cross and an identity moves, without restarting a node', async () => {
    const store = await tempDir('toolwire-nats-kept-');
    const nats = await startNats(['-sd', store]);
    const { a, b, alpha, alphaToken, beta } = await twoNodes(nats.url);
    answerCalls(beta);
    const arrived = nextFrame(alpha, 'call');
    const across = b.call('alpha__echo', {}, { deadlineMs: 30_000 });
    await arrived; // on alpha, which never answers it
    await nats.kill();
    const lost = await across;
    expect(lost.outcome === 'completed' && lost.capture.exitCode).toBe(ExitCode.UNAVAILABLE);
    const local = await b.call('beta__echo', { local: true });
    expect(local.outcome === 'completed' && local.capture.exitCode).toBe(0);

    await startNats(['-sd', store], nats.port);
    await waitFor(() => lists(b, 'alpha__echo') && lists(a, 'beta__echo'), 'each node to list the other’s host again', 10_000);
    const again = await a.call('beta__echo', { again: true });
    expect(again.outcome === 'completed' && Buffer.from(again.capture.stdout).toString()).toBe('{"again":true}');

    const closed = once(alpha, 'close') as Promise<[number, Buffer]>;
    const moved = await rawHost(b.url, alphaToken);
    await rawAdvertise(moved, [{ name: 'echo', inputSchema: object }]);
    expect((await closed)[0]).toBe(4000);
    await waitFor(() => a.server.router.linkOf('alpha')?.node === 'b', 'node a to route alpha to node b');
  }, 60_000);

  it('NATS restarted on its port with an empty JetStream store: the lease bucket is created again with the leases of the bound sessions, and a host identity moving to node b closes its session on node a (4000) within seconds', async () => {
    const nats = await startNats();
    const { a, b, alpha, alphaToken } = await twoNodes(nats.url);
    await nats.kill();
    await startNats([], nats.port); // the same port, a new (empty) store: no lease bucket
    await waitFor(() => b.server.router.linkOf('alpha')?.node === 'a' && lists(b, 'alpha__echo'), 'the cluster to heal', 10_000);

    const closed = once(alpha, 'close') as Promise<[number, Buffer]>;
    const moved = await rawHost(b.url, alphaToken);
    await rawAdvertise(moved, [{ name: 'echo', inputSchema: object }]);
    const code = await Promise.race([closed.then(([c]) => c), new Promise((resolve) => setTimeout(resolve, 5_000, 'still open after 5 s'))]);
    expect(code).toBe(4000);
    await waitFor(() => a.server.router.linkOf('alpha')?.node === 'b', 'node a to route alpha to node b');
  }, 60_000);
});
