/**
 * Issue 17 with real processes: `toolwire serve` nodes on a real nats-server, real tool hosts, the
 * CLI as the caller.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST2_TOKEN, cleanup, cliPath, repoRoot, spawnTs, waitForText } from '../helpers.js';
import { NATS_SERVER, startNats } from './nats.js';
import { call, callOn, startNode, toolsOn } from './nodes.js';

afterEach(cleanup);

/** The live-output host `beta`: the `toolwire host` CLI serving test/fixtures/live-tools.json. */
const liveHost = (url: string) =>
  spawnTs([cliPath, 'host', '--server', url, '--token', HOST2_TOKEN, '--manifest', join(repoRoot, 'test', 'fixtures', 'live-tools.json')]);

const fixtureHost = (url: string, token?: string) =>
  spawnTs([join(repoRoot, 'test', 'fixtures', 'host.ts')], { TOOLWIRE_SERVER: url, TOOLWIRE_TOKEN: token ?? 'host-token-aaaaaaaaaaaaaaaaaaaaaaaa' });

describe.skipIf(NATS_SERVER === undefined)('cluster nodes as processes: serve --config with a cluster key', () => {
  it('a host on node A is called from node B: 0, 65, 124, 127 and 130 as on one node', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    fixtureHost(a.url);
    await toolsOn(b, 10, 'node b to list the host’s tools');

    const ok = await call(b, 'alpha__echo', { from: 'b' });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('{"from":"b"}');
    expect((await call(b, 'alpha__strict', { n: 'x' })).code).toBe(65);
    expect((await call(b, 'alpha__wait', {}, ['--timeout', '500'])).code).toBe(124);
    expect((await call(b, 'alpha__nope')).code).toBe(127);

    // Ctrl-C on B's caller, once the tool on A's host is printing: the call stops, 130.
    liveHost(a.url);
    await toolsOn(b, 14, 'node b to list beta’s tools too');
    const child = callOn(b, 'beta__forever');
    const exited = once(child, 'exit');
    await waitForText(child.stdout!, /line 1\n/, 60_000);
    child.kill('SIGINT');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(130);
  }, 180_000);

  it('live output crosses nodes: the first line of a ticking tool reaches B’s caller long before the tool ends', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    liveHost(a.url);
    await toolsOn(b, 4, 'node b to list beta’s tools');
    const started = Date.now();
    const child = callOn(b, 'beta__ticker');
    await waitForText(child.stdout!, /line 1\n/, 60_000);
    const firstLine = Date.now() - started;
    const [code] = (await once(child, 'exit')) as [number | null];
    const total = Date.now() - started;
    expect(code).toBe(0);
    expect(total - firstLine).toBeGreaterThan(700); // the tool ticks for 1.2 s after its first line
  }, 180_000);

  it('node A SIGKILLed during a call from B: the call ends 69 within the node-loss bound and A’s tools leave B', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    liveHost(a.url);
    await toolsOn(b, 4, 'node b to list beta’s tools');
    const child = callOn(b, 'beta__forever');
    const done = once(child, 'exit');
    let stderr = '';
    child.stderr!.on('data', (d: string) => (stderr += d));
    await waitForText(child.stdout!, /line 1\n/, 60_000); // the call is running on a's host
    const killed = Date.now();
    process.kill(-a.child.pid!, 'SIGKILL');
    const [code] = (await done) as [number | null];
    expect(code).toBe(69);
    expect(Date.now() - killed).toBeLessThan(3_000);
    expect(stderr, stderr).toMatch(/node a was lost/);
    await toolsOn(b, 0, 'a’s tools to leave node b', true);
  }, 180_000);

  it('NATS down: calls to hosts on the same node keep working, calls to hosts on the other node end 69', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    fixtureHost(a.url);
    fixtureHost(b.url, HOST2_TOKEN);
    await toolsOn(b, 20, 'node b to list both hosts’ tools');
    await nats.kill();
    expect((await call(b, 'beta__echo', { local: true })).code).toBe(0);
    const remote = await call(b, 'alpha__echo');
    expect(remote.code).toBe(69);
  }, 180_000);
});
