/** Issue 17: the cluster on a 3-server NATS cluster, and NATS credentials. */
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '@toolwire/protocol';
import { connect } from '@nats-io/transport-node';
import { type TestServer, closeAll, startHost, startServer } from '@toolwire/testing';
import { join } from 'node:path';
import { cleanup, defer, repoRoot, text, waitFor } from '../helpers.js';
import { NATS_SERVER, clusterHosts, fixtureHost, natsClusterArgs, startNats, startNatsCluster } from './nats.js';

afterEach(async () => {
  await closeAll(); // servers and hosts before their NATS (in cleanup)
  await cleanup();
});

/** The exit code of an executor result (a declined call has none). */
const exitOf = (r: Awaited<ReturnType<import('@toolwire/server').ToolwireServer['executor']['execute']>>): number | string =>
  r.outcome === 'completed' ? r.capture.exitCode : r.outcome;

describe.skipIf(NATS_SERVER === undefined)('cluster on a NATS cluster of three servers', () => {
  it('one NATS server of three killed: the nodes reconnect and calls across them keep working', async () => {
    const nats = await startNatsCluster();
    const urls = nats.map((n) => n.url);
    const hosts = clusterHosts();
    const a = await startServer({ hosts, cluster: { nats: urls, name: 'f', node: 'a', heartbeatMs: 250 } });
    const b = await startServer({ hosts, cluster: { nats: [...urls].reverse(), name: 'f', node: 'b', heartbeatMs: 250 } });
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__echo'), 'node b to list alpha__echo', 15_000);
    expect(exitOf(await b.server.executor.execute({ name: 'alpha__echo', input: { n: 1 }, agent: 'agent' }))).toBe(0);

    await nats[0]!.kill();
    // Every call made once the nodes see each other again succeeds; wait for that, bounded.
    await waitFor(
      async () => {
        const r = await b.server.executor.execute({ name: 'alpha__echo', input: { n: 2 }, agent: 'agent', deadlineMs: 2_000 });
        return r.outcome === 'completed' && r.capture.exitCode === 0 && text(r.capture.stdout) === '{"n":2}';
      },
      'calls from b to a to work again after the NATS server went away',
      15_000,
      100,
    );
    for (let i = 0; i < 20; i++) {
      const r = await b.server.executor.execute({ name: 'alpha__echo', input: { i }, agent: 'agent' });
      expect(exitOf(r)).toBe(0);
    }
  }, 90_000);
  it('kvReplicas 3: the lease bucket is replicated on the three NATS servers, as configured, and read through its leader', async () => {
    const nats = await startNatsCluster();
    const urls = nats.map((n) => n.url);
    await startServer({ cluster: { nats: urls, name: 'r', node: 'a', heartbeatMs: 250, kvReplicas: 3 } });
    await startServer({ cluster: { nats: [...urls].reverse(), name: 'r', node: 'b', heartbeatMs: 250, kvReplicas: 3 } });
    const probe = await connect({ servers: urls });
    defer(() => probe.close());
    const info = await probe.request('$JS.API.STREAM.INFO.KV_toolwire-r-hosts', '', { timeout: 10_000 });
    const stream = info.json<{ config: { num_replicas: number; allow_direct?: boolean }; cluster?: { replicas?: unknown[] } }>();
    expect(stream.config.num_replicas).toBe(3);
    expect(stream.config.allow_direct ?? false).toBe(false); // reads through the leader: a lagging replica never answers a claim
    expect(stream.cluster?.replicas).toHaveLength(2); // the leader's two followers
  }, 90_000);

  it('a node that starts while its NATS cluster has no JetStream leader yet takes host identity leases once it has one', async () => {
    const args = await natsClusterArgs();
    // One server of three: no quorum, so JetStream answers no request (as while a fresh NATS cluster elects its leader).
    const first = await startNats(args[0]);
    // Node a joins; once its first try to open the bucket has failed, the other two servers start.
    let failedOnce!: () => void;
    const firstTryFailed = new Promise<void>((resolve) => (failedOnce = resolve));
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (_: unknown, message?: string) => {
        if (message?.startsWith('cluster: cannot open the host identity lease bucket yet') === true) failedOnce();
      },
    };
    const starting = startServer({ logger, hosts: clusterHosts(), cluster: { nats: [first.url], name: 'j', node: 'a', heartbeatMs: 250, kvReplicas: 3 } });
    await Promise.race([firstTryFailed, starting]);
    await Promise.all([startNats(args[1]), startNats(args[2])]);
    const a = await starting;
    const probe = await connect({ servers: [first.url] });
    defer(() => probe.close());
    // The node keeps trying to open the bucket: it is made once JetStream has a leader, and a host's hello takes its lease.
    await waitFor(
      async () => {
        const msg = await probe.request('$JS.API.STREAM.INFO.KV_toolwire-j-hosts', '', { timeout: 2_000 }).catch(() => undefined);
        return msg?.json<{ config?: { num_replicas?: number } }>().config?.num_replicas === 3;
      },
      'node a to make the lease bucket once JetStream has a leader',
      40_000,
      250,
    );
    await fixtureHost(a);
    const lease = await probe.request(
      '$JS.API.STREAM.MSG.GET.KV_toolwire-j-hosts',
      JSON.stringify({ last_by_subj: `$KV.toolwire-j-hosts.h.${Buffer.from('alpha').toString('base64url')}` }),
      { timeout: 5_000 },
    );
    const found = lease.json<{ message?: { data?: string } }>().message?.data;
    expect(JSON.parse(Buffer.from(found ?? '', 'base64').toString() || '{}')).toMatchObject({ node: 'a' });
  }, 120_000);

  // The worst placement, every run: node a's NATS server is the bucket's leader, and it is the one
  // killed. Node b's claim then needs the bucket's new leader (elected among the two left), and node
  // a its reconnect to another server (learnt from the cluster) to be asked to close its session.
  it('kvReplicas 3: a host identity still moves between nodes once one NATS server of three is gone (the bucket leader, node a’s server)', async () => {
    const { a, b, bucket } = await aliveOnLeaderKilled();
    await waitFor(
      async () => {
        const now = await bucket();
        return now?.cluster?.leader !== undefined && now.cluster.leader !== 'n0' && (now.state?.messages ?? 0) >= 1;
      },
      'the lease bucket to have a leader again, with alpha’s lease',
      30_000,
      200,
    );
    // The same identity on b: the lease (compare-and-set through the bucket's new leader) moves, a's session closes 4000.
    await fixtureHost(b);
    await movedToB(a, b);
  }, 150_000);

  it('kvReplicas 3: a host that says hello on node b while the lease bucket elects a new leader (its leader, node a’s NATS server, killed) takes the identity once it has one', async () => {
    const { a, b } = await aliveOnLeaderKilled();
    // At once, in this process: the claim runs while the bucket elects its new leader.
    await inProcessAlpha(b);
    await movedToB(a, b);
  }, 150_000);

  it('kvReplicas 3: a host whose claim runs out while the lease bucket elects a new leader binds on node b, and takes the lease once the bucket answers (a’s session closes, a lists alpha on b)', async () => {
    // b's claim gives up long before any election ends (they take seconds).
    const { a, b } = await aliveOnLeaderKilled({ claimMs: 300 });
    await inProcessAlpha(b);
    await movedToB(a, b);
  }, 150_000);
});

/**
 * Nodes a and b (kvReplicas 3) on a fresh 3-server NATS cluster, a connected to nats[0] only; host
 * alpha on a with its lease in the bucket; the bucket's leader moved to nats[0] (named n0), which is
 * then killed. `b` adds cluster options to node b. Resolves right after the kill.
 */
async function aliveOnLeaderKilled(b: { claimMs?: number } = {}): Promise<{
  a: TestServer;
  b: TestServer;
  bucket: () => Promise<{ cluster?: { leader?: string }; state?: { messages?: number } } | undefined>;
}> {
  const nats = await startNatsCluster();
  const urls = nats.map((n) => n.url);
  const hosts = clusterHosts();
  // Both nodes start while the fresh NATS cluster may still be electing its JetStream leader.
  const nodeA = await startServer({ hosts, cluster: { nats: [urls[0]!], name: 'm', node: 'a', heartbeatMs: 250, kvReplicas: 3 } });
  const nodeB = await startServer({ hosts, cluster: { nats: [urls[1]!], name: 'm', node: 'b', heartbeatMs: 250, kvReplicas: 3, ...b } });
  const probe = await connect({ servers: urls.slice(1), reconnect: true });
  defer(() => probe.close());
  const bucket = async (): Promise<{ cluster?: { leader?: string }; state?: { messages?: number } } | undefined> => {
    const msg = await probe.request('$JS.API.STREAM.INFO.KV_toolwire-m-hosts', '', { timeout: 2_000 }).catch(() => undefined);
    return msg?.json();
  };
  // In this process (as on b): a host process's start-up (tsx) on a loaded machine is not what these tests are about.
  await inProcessAlpha(nodeA);
  await waitFor(() => nodeB.server.router.hosts().some((h) => h.name === 'alpha' && h.node === 'a'), 'node b to see alpha on a', 15_000);
  await waitFor(async () => ((await bucket())?.state?.messages ?? 0) >= 1, 'alpha’s lease in the bucket', 15_000, 100);
  // Move the bucket's leader to nats[0] (the server nodes' names are n0, n1, n2).
  await waitFor(
    async () => {
      if ((await bucket())?.cluster?.leader === 'n0') return true;
      await probe.request('$JS.API.STREAM.LEADER.STEPDOWN.KV_toolwire-m-hosts', '', { timeout: 5_000 }).catch(() => undefined);
      return false;
    },
    'the lease bucket’s leader on the first NATS server',
    30_000,
    1_000,
  );
  await nats[0]!.kill();
  return { a: nodeA, b: nodeB, bucket };
}

/** The fixture host `alpha` (test/fixtures/host-tools.ts) in this process, on `node`. */
const inProcessAlpha = (node: TestServer): Promise<unknown> =>
  startHost(node, join(repoRoot, 'test', 'fixtures', 'host-tools.ts'), { name: 'alpha', hostOptions: { cancelGraceMs: 1_000 } });

/** alpha moved from node a to node b: a lists it on b (its own session closed 4000), b holds it, a call from a works. */
async function movedToB(a: TestServer, b: TestServer): Promise<void> {
  await waitFor(
    () => a.server.router.hosts().some((h) => h.name === 'alpha' && h.node === 'b' && h.tools.includes('alpha__echo')),
    'node a to list alpha on b',
    15_000,
  );
  expect(b.server.router.hosts().find((h) => h.name === 'alpha')?.node).toBeUndefined();
  expect(exitOf(await a.server.executor.execute({ name: 'alpha__echo', input: {}, agent: 'agent' }))).toBe(0);
}

describe.skipIf(NATS_SERVER === undefined)('cluster NATS credentials', () => {
  it('nodes join with the NATS user and password; a node with wrong credentials cannot join (ClusterError naming the servers)', async () => {
    const nats = await startNats(['--user', 'tw', '--pass', 'secret-pass-123']);
    const hosts = clusterHosts();
    const a = await startServer({
      hosts,
      cluster: { nats: [nats.url], name: 'c', node: 'a', heartbeatMs: 250, credentials: { user: 'tw', pass: 'secret-pass-123' } },
    });
    const b = await startServer({
      hosts,
      cluster: { nats: [nats.url], name: 'c', node: 'b', heartbeatMs: 250, credentials: { user: 'tw', pass: 'secret-pass-123' } },
    });
    await fixtureHost(a);
    await waitFor(() => b.server.router.tools().some((t) => t.name === 'alpha__echo'), 'node b to list alpha__echo');
    expect(exitOf(await b.server.executor.execute({ name: 'alpha__echo', input: {}, agent: 'agent' }))).toBe(ExitCode.OK);

    const { ToolwireServer } = await import('@toolwire/server');
    const intruder = new ToolwireServer({ cluster: { nats: [nats.url], name: 'c', node: 'x', credentials: { user: 'tw', pass: 'wrong' } } });
    const error = await intruder.listen(0, '127.0.0.1').then(
      () => undefined,
      (e: unknown) => e,
    );
    await intruder.close();
    expect((error as Error).name).toBe('ClusterError');
    expect((error as Error).message).toMatch(/cannot join cluster "c": no NATS server of nats:\/\/127\.0\.0\.1:\d+ accepted the connection/);
    expect((error as Error).message).not.toContain('wrong');
  }, 60_000);
});
