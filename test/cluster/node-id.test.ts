/**
 * Node ids are unique in a cluster: a second `toolwire serve` given the id of a live node must not
 * join (it would answer that node's calls and make the others drop and re-read it at every heartbeat).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST_TOKEN, cleanup, finish, repoRoot, spawnTs } from '../helpers.js';
import { NATS_SERVER, startNats } from './nats.js';
import { call, spawnNode, startNode, toolsOn } from './nodes.js';

afterEach(cleanup);

/** The fixture host `alpha` (test/fixtures/host.ts) on `url`. */
const fixtureHost = (url: string) => spawnTs([join(repoRoot, 'test', 'fixtures', 'host.ts')], { TOOLWIRE_SERVER: url, TOOLWIRE_TOKEN: HOST_TOKEN });

describe.skipIf(NATS_SERVER === undefined)('cluster node ids', () => {
  it('a node started with the id of a live node exits 69 naming the id, and calls across the cluster keep working', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    fixtureHost(a.url);
    await toolsOn(b, 10, 'node b to list the host’s tools');

    const twin = await finish(await spawnNode(nats.url, 'a'), 20_000);
    expect(twin.code).toBe(69);
    expect(twin.stderr).toMatch(/cannot join cluster "it": node id "a" is already used by a live node/);

    // Node a and its host are still reachable from b, every time.
    for (let i = 0; i < 5; i++) {
      const ok = await call(b, 'alpha__echo', { i });
      expect(ok.code, ok.stderr).toBe(0);
    }
  }, 120_000);
});
