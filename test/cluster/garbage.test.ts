/**
 * Garbage on a cluster's NATS subjects from a client that holds the cluster's credentials: the
 * receiving node drops and logs each message, and goes on serving (its NATS link, its membership
 * and the calls across nodes in flight are unharmed).
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { type TestServer, closeAll, startHost, startServer } from '@toolwire/testing';
import { decodeAnswer } from '../../packages/server/src/cluster/answer.js';
import { unbatch } from '../../packages/server/src/cluster/batch.js';
import { connectBus } from '../../packages/server/src/cluster/nats-bus.js';
import { cleanup, defer, waitFor } from '../helpers.js';
import { NATS_SERVER, clusterHosts, startNats } from './nats.js';

afterEach(async () => {
  await closeAll(); // servers and hosts before their NATS (in cleanup)
  await cleanup();
});

const lists = (node: TestServer, name: string): boolean => node.server.router.tools().some((t) => t.name === name);

/** Nodes `a` (its warnings kept in `warnings`) and `b` on one nats-server, host alpha on a, and a raw NATS client. */
async function twoNodesAndAClient(): Promise<{ a: TestServer; b: TestServer; nc: NatsConnection; warnings: string[] }> {
  const nats = await startNats();
  const hosts = clusterHosts();
  const cluster = { nats: [nats.url], name: 'gb', heartbeatMs: 500 };
  const warnings: string[] = [];
  const keep = (...args: unknown[]): void => void warnings.push(args.map((x) => (typeof x === 'string' ? x : '')).join(' '));
  const logger = { debug: () => undefined, info: () => undefined, warn: keep, error: keep } as never;
  const a = await startServer({ hosts, logger, cluster: { ...cluster, node: 'a' } });
  const b = await startServer({ hosts, cluster: { ...cluster, node: 'b' } });
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  defer(release);
  await startHost(
    a,
    {
      echo: (input: unknown) => JSON.stringify(input),
      held: async () => {
        await held;
        return 'released';
      },
    },
    { name: 'alpha' },
  );
  await waitFor(() => lists(b, 'alpha__held'), 'node b to list alpha__held');
  const nc = await connect({ servers: nats.url, reconnect: false });
  defer(() => nc.close());
  Object.assign(a, { release: () => release() });
  return { a, b, nc, warnings };
}

/** One call item of a batch (`cluster/batch.ts`): id (u48), length (u32), the bytes. */
function batchOf(id: number, value: unknown): Buffer {
  const item = Buffer.from(JSON.stringify(value));
  const out = Buffer.alloc(10 + item.length);
  out.writeUIntBE(id, 0, 6);
  out.writeUInt32BE(item.length, 6);
  item.copy(out, 10);
  return out;
}

describe.skipIf(NATS_SERVER === undefined)('cluster over NATS: garbage from a client with the credentials', () => {
  it('a call whose workspace or agent is an object that cannot become a string is answered 76 and logged; node a stays in the cluster and serves calls', async () => {
    const { a, b, nc, warnings } = await twoNodesAndAClient();
    const answers = nc.subscribe('junk.answers');
    const unconvertible = { toString: 1 };
    nc.publish('toolwire.gb.node.a.call', batchOf(1, { host: 'alpha', tool: 'echo', id: 'x1', input: {}, workspace: unconvertible, agent: 'g' }), {
      reply: 'junk.answers',
    });
    nc.publish('toolwire.gb.node.a.call', batchOf(2, { host: 'alpha', tool: 'echo', id: 'x2', input: {}, workspace: '', agent: unconvertible }), {
      reply: 'junk.answers',
    });
    const exits: number[] = [];
    for await (const message of answers) {
      unbatch(message.data, (_id, bytes) => {
        const answer = decodeAnswer(bytes);
        if (answer?.t === 'end') exits.push(answer.exitCode);
      });
      if (exits.length >= 2) break;
    }
    expect(exits).toEqual([ExitCode.PROTOCOL, ExitCode.PROTOCOL]);
    await waitFor(() => warnings.filter((l) => l.includes('unreadable call from another node')).length === 2, 'node a to log both calls');
    // Node a still hears NATS: a call from b reaches its host and b still lists a past the loss bound.
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // more than 2 × heartbeatMs: a would be lost by now
    expect(b.server.router.tools().some((t) => t.name === 'alpha__echo')).toBe(true);
    const result = await b.call('alpha__echo', { after: 'garbage' });
    expect(result.outcome === 'completed' && result.capture.exitCode).toBe(0);
    await a.close(); // no hang
  });

  it('a heartbeat whose boot is missing, or an object that cannot become a string, is dropped: node b keeps node a and its call in flight there', async () => {
    const { a, b, nc, warnings } = await twoNodesAndAClient();
    const inFlight = b.call('alpha__held', {}, { deadlineMs: 20_000 });
    await waitFor(() => a.server.router.linkOf('alpha') !== undefined && b.executor.inFlight === 1, 'the call to be in flight');
    nc.publish('toolwire.gb.heartbeat', JSON.stringify({ node: 'a', version: 99 }));
    nc.publish('toolwire.gb.heartbeat', JSON.stringify({ node: 'a', version: 99, boot: { toString: 1 } }));
    nc.publish('toolwire.gb.heartbeat', JSON.stringify({ node: 'b', version: 99, boot: { toString: 1 } })); // to a
    await nc.flush();
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // past the loss bound, a's real heartbeats go on
    (a as unknown as { release(): void }).release();
    const result = await inFlight;
    expect(result.outcome === 'completed' && result.capture.exitCode).toBe(0);
    expect(warnings.join('')).not.toMatch(/was lost|restarted/);
    expect(b.server.router.tools().some((t) => t.name === 'alpha__echo')).toBe(true);
    await a.close(); // no hang
  });

  it('a bus handler that throws on a message drops that message (logged) and the bus goes on delivering: the NATS client’s reader does not end', async () => {
    const nats = await startNats();
    const warnings: string[] = [];
    const keep = (...args: unknown[]): void => void warnings.push(args.map((x) => (typeof x === 'string' ? x : '')).join(' '));
    const logger = { debug: () => undefined, info: () => undefined, warn: keep, error: keep } as never;
    const config = {
      nats: [nats.url],
      name: 'gb',
      node: 'x',
      credentials: {},
      tls: undefined,
      heartbeatMs: 500,
      requestTimeoutMs: 500,
      kvReplicas: 1,
      claimMs: 1000,
    };
    const bus = await connectBus(config, logger);
    defer(() => bus.close());
    const seen: string[] = [];
    let second: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => (second = resolve));
    bus.subscribe('gb.t', (data) => {
      const text = Buffer.from(data).toString();
      seen.push(text);
      if (text === 'throw') throw new TypeError('handler bug');
      second();
    });
    bus.publish('gb.t', Buffer.from('throw'));
    bus.publish('gb.t', Buffer.from('after'));
    await arrived;
    expect(seen).toEqual(['throw', 'after']);
    expect(warnings.join('\n')).toMatch(/could not be handled/);
    expect(bus.connected).toBe(true);
  });
});
