/**
 * Nodes and NATS stalled or restarted under calls, with real processes: `toolwire serve` nodes on a
 * real nats-server, the `toolwire host` CLI, the CLI as the caller.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOST2_TOKEN, cleanup, cliPath, repoRoot, spawnTs, waitForText } from '../helpers.js';
import { NATS_SERVER, startNats } from './nats.js';
import { call, callOn, startNode, toolsOn } from './nodes.js';

afterEach(cleanup);

/** The live-output host `beta` (test/fixtures/live-tools.json) on `url`; its JSON log lines are on stderr. */
const liveHost = (url: string) =>
  spawnTs([cliPath, 'host', '--server', url, '--token', HOST2_TOKEN, '--manifest', join(repoRoot, 'test', 'fixtures', 'live-tools.json')]);

describe.skipIf(NATS_SERVER === undefined)('cluster nodes as processes: a node or NATS stalled', () => {
  it('node A stopped (SIGSTOP) past the loss bound during a call from B: B’s call ends 69, and once A runs again the call is stopped on A’s host, A’s tools return to B and calls across work', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a');
    const b = await startNode(nats.url, 'b');
    const host = liveHost(a.url);
    await toolsOn(b, 4, 'node b to list beta’s tools');
    const child = callOn(b, 'beta__forever');
    const done = once(child, 'close');
    let stderr = '';
    child.stderr!.on('data', (d: string) => (stderr += d));
    await waitForText(child.stdout!, /line 1\n/, 60_000); // the call is running on a's host
    const stopped = Date.now();
    process.kill(-a.child.pid!, 'SIGSTOP');
    const [code] = (await done) as [number | null];
    expect(code).toBe(69);
    expect(stderr, stderr).toMatch(/node a was lost/);
    expect(Date.now() - stopped).toBeLessThan(3_000);
    await toolsOn(b, 0, 'a’s tools to leave node b', true);
    // Meanwhile a call to one of them says why: the host is still connected, to a node that is lost.
    const meanwhile = await call(b, 'beta__echo', { during: 'SIGSTOP' });
    expect(meanwhile.code).toBe(69);
    expect(meanwhile.stderr).toMatch(/host beta is unreachable: node a was lost \(no heartbeat for \d+ ms\)/);

    // The host's call ends once a runs again (stopped: 130), not at its deadline (120 s).
    const ended = waitForText(host.stderr!, /"tool":"forever","call":"[^"]+","exitCode":130/, 15_000);
    process.kill(-a.child.pid!, 'SIGCONT');
    await ended;
    await toolsOn(b, 4, 'node b to list beta’s tools again', false, 15_000);
    const again = await call(b, 'beta__echo', { after: 'SIGCONT' });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('{"after":"SIGCONT"}');
  }, 120_000);
});
