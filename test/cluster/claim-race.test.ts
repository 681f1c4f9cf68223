/**
 * One identity, one session across nodes, when a claim is slow: a hello on node A waits for the node
 * that held the identity (stalled) to confirm its eviction, and meanwhile a newer hello of the same
 * identity on node B takes the lease and asks A to close its session — which A has not bound yet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { closeAll, startServer } from '@toolwire/testing';
import { HOST2_TOKEN, HOST_TOKEN, cleanup, nextFrame, rawAdvertise, rawHost, waitFor } from '../helpers.js';
import { NATS_SERVER, startNats } from './nats.js';
import { startNode } from './nodes.js';

afterEach(async () => {
  await closeAll();
  await cleanup();
});

const tools = [{ name: 'echo', inputSchema: { type: 'object' } }];

describe.skipIf(NATS_SERVER === undefined)('cluster: a slow identity claim', () => {
  it('a hello on A still waiting to evict a stalled node’s session is not bound once a newer session on B took the identity: one session stays, B’s', async () => {
    const nats = await startNats();
    const hosts = [
      { name: 'alpha', token: HOST_TOKEN },
      { name: 'beta', token: HOST2_TOKEN },
    ];
    const cluster = { nats: [nats.url], name: 'it', heartbeatMs: 250 };
    const a = await startServer({ hosts, cluster: { ...cluster, node: 'a' } });
    const b = await startServer({ hosts, cluster: { ...cluster, node: 'b' } });
    const c = await startNode(nats.url, 'c');
    await rawAdvertise(await rawHost(c.url, HOST_TOKEN), tools);
    await waitFor(() => a.server.router.hosts().some((h) => h.name === 'alpha' && h.node === 'c'), 'node a to list alpha on node c', 10_000);

    // Node c stalls: an evict request to it waits requestTimeoutMs (2 s) for its answer.
    process.kill(-c.child.pid!, 'SIGSTOP');
    const onA = await rawHost(a.url, HOST_TOKEN);
    const aOutcome = Promise.race([
      nextFrame(onA, 'welcome').then(() => 'welcome'),
      new Promise((resolve) => onA.once('close', (code) => resolve(`closed ${code}`))),
    ]);
    onA.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'raw-test' }));
    // The hello on a is waiting for c; a newer session of alpha binds on b meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const onB = await rawHost(b.url, HOST_TOKEN);
    await rawAdvertise(onB, tools);
    // a's claim ends once c's answer times out (requestTimeoutMs): the session is closed 4000, never welcomed.
    expect(await aOutcome).toBe('closed 4000');
    await waitFor(() => onA.readyState === WebSocket.CLOSED, 'the older session (on a) to be closed', 5_000);
    expect(onB.readyState).toBe(WebSocket.OPEN);
    expect(a.server.router.hosts().find((h) => h.name === 'alpha')?.node).toBe('b');
    process.kill(-c.child.pid!, 'SIGCONT');
  }, 60_000);
});
