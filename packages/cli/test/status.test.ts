/**
 * `toolwire status` against a real server (in this process, port 0) with a raw tool host that
 * never answers (its calls stay in flight): text, --json, --watch, refusals.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolwireServer } from '@toolwire/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { statusCommand } from '../src/commands/status.js';
import { testIO } from './helpers/cli-io.js';

const CALLER = 'caller-token-status-aaaaaaaaaaaaaaaaaaa';
const HOST = 'host-token-status-bbbbbbbbbbbbbbbbbbbbb';

let home: string;
let server: ToolwireServer;
let base: string;
let host: WebSocket;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'toolwire-status-'));
  server = new ToolwireServer({ hosts: [{ name: 'alpha', token: HOST }], callers: [{ name: 'agent', token: CALLER }], cancelGraceMs: 100 });
  const info = await server.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${info.port}`;
  host = new WebSocket(info.url, { headers: { authorization: `Bearer ${HOST}` } });
  host.on('error', () => {});
  await once(host, 'open');
  host.send(JSON.stringify({ type: 'hello', protocol: 1, software: 'raw-test' }));
  host.send(JSON.stringify({ type: 'advertise', tools: [{ name: 'slow', description: 'never answers', inputSchema: { type: 'object' } }] }));
  for (let i = 0; i < 500 && server.router.tools().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
});
afterEach(async () => {
  host.terminate();
  await server.close();
  await rm(home, { recursive: true, force: true });
});

const io = (env: NodeJS.ProcessEnv = {}) => testIO({ TOOLWIRE_HOME: home, ...env });

describe('toolwire status', () => {
  it('prints hosts, tools, calls in flight and recent failures', async () => {
    await server.executor.execute({ id: 'gone-1', name: 'nope', input: {}, agent: 'agent' }); // 127
    const call = server.executor.execute({ id: 'running-1', name: 'alpha__slow', input: {}, agent: 'agent' });
    const t = io();
    expect(await statusCommand(['--server', base, '--token', CALLER], t)).toBe(0);
    const out = t.out();
    expect(out).toMatch(/^hosts \(1\)\n {2}alpha {2}127\.0\.0\.1 {2}v1 {2}connected \d+ m?s ago {2}no heartbeat yet {2}1 tools {2}1 in flight\n/);
    expect(out).toContain('tools (1)\n  alpha__slow  never answers\n');
    expect(out).toMatch(/calls in flight \(1\)\n {2}running-1 {2}alpha__slow {2}on alpha {2}by agent {2}running \d+ m?s {2}0 B out\n/);
    expect(out).toMatch(
      /recent failures \(1 of the last 1 calls\)\n {2}gone-1 {2}nope {2}exit 127 \(not_found\) {2}on \(local\) {2}by agent {2}ended \d+ m?s ago\n$/,
    );
    server.executor.stop();
    await call;
  });

  it('--json prints the snapshot', async () => {
    const t = io();
    expect(await statusCommand(['--server', base.replace('http', 'ws'), '--token', CALLER, '--json'], t)).toBe(0);
    const json = JSON.parse(t.out());
    expect(json.you).toEqual({ caller: 'agent', grant: ['*'] });
    expect(json.hosts[0]).toMatchObject({ name: 'alpha', tools: [{ name: 'alpha__slow', tool: 'slow', description: 'never answers' }] });
    expect(json.callsInFlight).toBe(0);
  });

  it('--watch prints again every --interval until SIGINT, then exits 0', async () => {
    const t = io();
    const done = statusCommand(['--server', base, '--token', CALLER, '--watch', '--interval', '50'], t);
    for (let i = 0; i < 500 && t.out().split('hosts (1)').length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(t.out().split('hosts (1)').length).toBeGreaterThanOrEqual(3);
    t.signals.emit('SIGINT');
    expect(await done).toBe(0);
  });

  it('exits 77 for a refused token, 69 for an unreachable server, 64 for misuse', async () => {
    const refused = io();
    expect(await statusCommand(['--server', base, '--token', 'wrong'], refused)).toBe(77);
    expect(refused.err()).toContain('token refused');
    const closed = io();
    expect(await statusCommand(['--server', 'http://127.0.0.1:1', '--token', CALLER], closed)).toBe(69);
    expect(closed.err()).toContain('cannot reach server');
    const misuse = io();
    expect(await statusCommand(['--server', base, '--token', CALLER, '--interval', '10'], misuse)).toBe(64);
    expect(misuse.err()).toContain('--interval goes with --watch');
    expect(await statusCommand(['--server', base, '--token', CALLER, '--bogus'], io())).toBe(64);
  });
});
