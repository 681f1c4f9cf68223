/**
 * Issue 17 with real processes: `toolwire serve` nodes on a real nats-server, real tool hosts, the
 * CLI as the caller.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CALLER_TOKEN, HOST2_TOKEN, cleanup, cliPath, defer, repoRoot, spawnTs, waitFor, waitForText } from '../helpers.js';
import { NATS_SERVER, startNats } from './nats.js';
import { call, callOn, startNode, status, toolsOn } from './nodes.js';

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

  it('an MCP client of the 2026-07-28 revision (stateless) calls a host on node A through node B, and through A', async () => {
    const nats = await startNats();
    const a = await startNode(nats.url, 'a', { heartbeatMs: 1000 });
    const b = await startNode(nats.url, 'b', { heartbeatMs: 1000 });
    fixtureHost(a.url);
    await toolsOn(b, 10, 'node b to list the host’s tools');
    for (const node of [b, a]) {
      const client = new Client({ name: 'stateless', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      defer(() => client.close());
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${node.http}/mcp`), { requestInit: { headers: { authorization: `Bearer ${CALLER_TOKEN}` } } }),
      );
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const result = await client.callTool({ name: 'alpha__echo', arguments: { via: node === a ? 'a' : 'b' } });
      expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: `{"via":"${node === a ? 'a' : 'b'}"}` });
    }
  }, 180_000);

  it('a node started after a host connected to another node answers that host’s tools from its first call (its port opens once it has read the other nodes’ hosts)', async () => {
    const nats = await startNats();
    // A long heartbeat: before it had read them, a fresh node did not know of a's hosts for up to 3 s.
    const a = await startNode(nats.url, 'a', { heartbeatMs: 3000 });
    fixtureHost(a.url);
    await toolsOn(a, 10, 'node a to list the host’s tools');
    const b = await startNode(nats.url, 'b', { heartbeatMs: 3000 });
    // The first request node b serves: the tool of a host it has never seen connect.
    const client = new Client({ name: 'fresh', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    defer(() => client.close());
    await client.connect(new StreamableHTTPClientTransport(new URL(`${b.http}/mcp`), { requestInit: { headers: { authorization: `Bearer ${CALLER_TOKEN}` } } }));
    const result = await client.callTool({ name: 'alpha__echo', arguments: { first: true } });
    expect(result.structuredContent).toMatchObject({ exitCode: 0, stdout: '{"first":true}' });
  }, 120_000);

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
    const done = once(child, 'close'); // at 'exit' stderr may still be unread
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

describe.skipIf(NATS_SERVER === undefined)('cluster nodes as processes: every node shows the node of each host and call', () => {
  it('/metrics labels calls with the host’s node, the call-end log line names it, /status/snapshot and `toolwire status` list every host of every node', async () => {
    const nats = await startNats();
    // The default node heartbeat (1 s): this test is not about the node-loss bound, and a loaded machine may stall a node for 0.5 s.
    const a = await startNode(nats.url, 'a', { heartbeatMs: 1000 });
    const b = await startNode(nats.url, 'b', { heartbeatMs: 1000 }, {}, 'info');
    let bLog = '';
    b.child.stderr!.on('data', (d: string) => (bLog += d));
    fixtureHost(a.url);
    fixtureHost(b.url, HOST2_TOKEN);
    await toolsOn(b, 20, 'node b to list both hosts’ tools');
    await toolsOn(a, 20, 'node a to list both hosts’ tools');

    const echo = await call(b, 'alpha__echo', { to: 'a' });
    expect(echo.code, echo.stderr).toBe(0);
    expect((await call(b, 'beta__exit3')).code).toBe(3);

    // /metrics on b: the remote call under node="a", the local one under node="b".
    const scrape = await fetch(`${b.http}/metrics`, { headers: { authorization: `Bearer ${CALLER_TOKEN}` } });
    const metrics = await scrape.text();
    expect(metrics).toContain('toolwire_calls_total{tool="alpha__echo",host="alpha",node="a",exit_code="0"} 1');
    expect(metrics).toContain('toolwire_calls_total{tool="beta__exit3",host="beta",node="b",exit_code="3"} 1');
    expect(metrics).toMatch(/toolwire_call_duration_seconds_count\{tool="alpha__echo",host="alpha",node="a"\} 1/);

    // b's call-end log lines name the node of the host that answered (a log line is held up to 10 ms before it is written).
    const endedLines = (): string[] => bLog.split('\n').filter((l) => l.includes('"call ended"'));
    await waitFor(() => endedLines().length >= 2, 'both call-end lines in node b’s log');
    const ended = endedLines().map((l) => JSON.parse(l) as { tool: string; host: string; node: string });
    expect(ended.map((e) => [e.tool, e.host, e.node])).toEqual([
      ['alpha__echo', 'alpha', 'a'],
      ['beta__exit3', 'beta', 'b'],
    ]);

    // /status/snapshot (via `toolwire status --json`) from a: both hosts with their node, and the cluster's nodes.
    const json = await status(a, ['--json']);
    expect(json.code, json.stderr).toBe(0);
    const snapshot = JSON.parse(json.stdout) as { node: string; nodes: string[]; hosts: { name: string; node: string }[] };
    expect(snapshot.node).toBe('a');
    expect(snapshot.nodes).toEqual(['a', 'b']);
    expect(snapshot.hosts.map((h) => [h.name, h.node]).sort()).toEqual([
      ['alpha', 'a'],
      ['beta', 'b'],
    ]);
    // b's snapshot: its recent calls with the node of their host.
    const fromB = JSON.parse((await status(b, ['--json'])).stdout) as { recent: { tool: string; node: string }[] };
    expect(fromB.recent.map((c) => [c.tool, c.node])).toEqual([
      ['beta__exit3', 'b'],
      ['alpha__echo', 'a'],
    ]);

    // `toolwire status` as text, from either node: the nodes, then every host with its node.
    for (const [node, self] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      const text = await status(node);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain(`cluster nodes (2)  ${self === 'a' ? 'a (this one)  b' : 'a  b (this one)'}`);
      expect(text.stdout).toMatch(/^ {2}alpha {2}node a {2}/m);
      expect(text.stdout).toMatch(/^ {2}beta {2}node b {2}/m);
    }
  }, 180_000);
});
